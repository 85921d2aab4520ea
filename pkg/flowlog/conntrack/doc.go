// Package conntrack reads the kernel's connection tracking table: a dump
// of every entry with its tuples, state and counters, and a stream of new
// and destroyed entries (the latter with final counters).
//
// The files:
//
//	conntrack.go  Entry, Reader (Dump), Listener (events), EnableAccounting
//
// # Library
//
// github.com/ti-mo/conntrack v0.6.0 (with github.com/ti-mo/netfilter
// v0.5.3; MIT), both served by the module proxy: ctnetlink dumps, events
// and deletes over github.com/mdlayher/netlink, which the project already
// uses, with the network namespace as a socket option. Project Calico
// writes its own (felix/nfnetlink/conntrack*.go).
//
// # Facts this package relies on
//
// Counters are kept only with net.netfilter.nf_conntrack_acct=1, a
// per-namespace sysctl; entries created before it was set count nothing.
// felix's collector dumps the table every 5 s (DefaultConntrackPollingInterval)
// rather than relying on events,
// takes counters of the original direction as "packets/bytes in" of the
// destination's report and of the reply direction as its "out", and
// expires a TCP entry as soon as its state reaches TIME_WAIT
// (Entry.Finished). ICMP entries carry the echo identifier and type/code
// in the ports (flowlog.ICMPPorts), as NFLOG's tuples do, so both join on
// one Tuple. Dump returns the whole table at once (ti-mo's API has no
// streaming dump): tens of thousands of entries cost a few megabytes per
// dump. Events are sent only while net.netfilter.nf_conntrack_events
// allows it (its default, 2, sends them when someone listens); a listener
// that falls behind gets ENOBUFS, reported by Close (EventsLost), after
// which the caller must dump again.
package conntrack
