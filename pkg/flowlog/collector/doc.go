// Package collector turns what the kernel reports about connections into
// flow records: the NFLOG paths that say which rules decided (package
// nflog, looked up in the ruleset's prefix table), the conntrack counters
// of the connections allowed (package conntrack), and the endpoints at
// either end (felix's model, through Endpoints). One goroutine owns a
// Collector.
//
// The files:
//
//	collector.go  Config, Endpoints, Pending; OnPacket, OnDump, Flush; Stats, Counts
//	conn.go       per connection: the latest path of each direction, counters, what was reported
//	run.go        Loop: NFLOG groups 1 and 2, conntrack dumps, flushes, new prefix tables
//
// As in felix's collector (felix/collector/collector.go, stats.go): a
// connection is reported by the destination (reporter Dst) from its
// ingress path when the destination is local, and by the source (Src) from
// its egress path when the source is; allowed connections count conntrack's
// deltas (in = original direction for Dst, reply for Src), denied ones the
// packets NFLOG saw, since a dropped packet never confirms a conntrack
// entry; a connection is over when conntrack no longer holds it or holds it
// in TCP TIME_WAIT, and a connection conntrack never held (denied) after
// AgeTimeout (10 s) without packets. Destination NAT is undone with the
// reply tuple, as felix's collector does. Where felix reports every second
// to its aggregator, we report at each flush (FlowLogsFlushInterval), which
// changes no record. The pending trace comes from a function the
// integration provides (felix evaluates staged policies in user space).
package collector
