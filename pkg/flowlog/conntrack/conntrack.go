package conntrack

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/mdlayher/netlink"
	ct "github.com/ti-mo/conntrack"
	"github.com/ti-mo/netfilter"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/flowlog"
)

// Entry is one conntrack entry: the connection's tuple in each direction
// and its counters (zero unless accounting is on).
type Entry struct {
	ID                       uint32
	Zone                     uint16
	Orig, Reply              flowlog.Tuple
	OrigPackets, OrigBytes   uint64
	ReplyPackets, ReplyBytes uint64
	Assured, SeenReply       bool
	SrcNAT, DstNAT           bool
	TCPState                 uint8 // TCPStateNone for other protocols
}

// TCP conntrack states (include/uapi/linux/netfilter/nf_conntrack_tcp.h)
// that matter here.
const (
	TCPStateNone        uint8 = 0
	TCPStateEstablished uint8 = 3
	TCPStateTimeWait    uint8 = 7
)

// Finished says the connection is over though its entry lingers: a TCP
// connection in TIME_WAIT or later (felix's collector expires such entries
// early).
func (e Entry) Finished() bool {
	return e.Orig.Proto == flowlog.ProtoTCP && e.TCPState >= TCPStateTimeWait
}

func entryOf(f ct.Flow) Entry {
	e := Entry{
		ID: f.ID, Zone: f.Zone,
		Orig: tupleOf(f.TupleOrig), Reply: tupleOf(f.TupleReply),
		OrigPackets: f.CountersOrig.Packets, OrigBytes: f.CountersOrig.Bytes,
		ReplyPackets: f.CountersReply.Packets, ReplyBytes: f.CountersReply.Bytes,
		Assured: f.Status.Assured(), SeenReply: f.Status.SeenReply(),
		SrcNAT: f.Status.SrcNAT(), DstNAT: f.Status.DstNAT(),
	}
	if f.ProtoInfo.TCP != nil {
		e.TCPState = f.ProtoInfo.TCP.State
	}
	return e
}

func tupleOf(t ct.Tuple) flowlog.Tuple {
	out := flowlog.Tuple{
		Src: t.IP.SourceAddress.Unmap(), Dst: t.IP.DestinationAddress.Unmap(),
		Proto: t.Proto.Protocol, SrcPort: t.Proto.SourcePort, DstPort: t.Proto.DestinationPort,
	}
	if t.Proto.ICMPv4 || t.Proto.ICMPv6 {
		out.SrcPort, out.DstPort = flowlog.ICMPPorts(t.Proto.ICMPID, t.Proto.ICMPType, t.Proto.ICMPCode)
	}
	return out
}

// Reader dumps the conntrack table of one network namespace.
type Reader struct {
	conn *ct.Conn
}

// Open opens a reader in the network namespace of descriptor netns (0: the
// caller's).
func Open(netns int) (*Reader, error) {
	c, err := ct.Dial(&netlink.Config{NetNS: netns})
	if err != nil {
		return nil, fmt.Errorf("opening conntrack netlink socket: %w", err)
	}
	return &Reader{conn: c}, nil
}

// Dump returns every entry, both families.
func (r *Reader) Dump() ([]Entry, error) {
	flows, err := r.conn.Dump(nil)
	if err != nil {
		return nil, fmt.Errorf("dumping conntrack: %w", err)
	}
	out := make([]Entry, len(flows))
	for i, f := range flows {
		out[i] = entryOf(f)
	}
	return out, nil
}

// Close closes the reader's socket.
func (r *Reader) Close() error { return r.conn.Close() }

// EventType says what happened to an entry.
type EventType uint8

// Event types.
const (
	EventNew EventType = iota + 1
	EventUpdate
	EventDestroy
)

// Event is one change of the table. A Destroy carries the connection's
// final counters.
type Event struct {
	Type  EventType
	Entry Entry
}

// Listener receives the table's events until closed.
type Listener struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error // what stopped it, set before done closes
}

// Listen subscribes to new and destroyed entries (and updates, when
// updates is true) in the network namespace of descriptor netns and calls
// fn for each, on one goroutine, until ctx ends or Close. The kernel sends
// events only while net.netfilter.nf_conntrack_events allows (1, or 2 with
// a listener: the default).
func Listen(ctx context.Context, netns int, updates bool, fn func(Event)) (*Listener, error) {
	c, err := ct.Dial(&netlink.Config{NetNS: netns})
	if err != nil {
		return nil, fmt.Errorf("opening conntrack netlink socket: %w", err)
	}
	// Report lost events (ENOBUFS) rather than drop them silently.
	if err := c.SetOption(netlink.NoENOBUFS, false); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("conntrack events: %w", err)
	}
	groups := []netfilter.NetlinkGroup{netfilter.GroupCTNew, netfilter.GroupCTDestroy}
	if updates {
		groups = append(groups, netfilter.GroupCTUpdate)
	}
	events := make(chan ct.Event, 256)
	errs, err := c.Listen(events, 1, groups)
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("subscribing to conntrack events: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &Listener{cancel: cancel, done: make(chan struct{})}
	go l.run(ctx, c, events, errs, fn)
	return l, nil
}

func (l *Listener) run(ctx context.Context, c *ct.Conn, events chan ct.Event, errs chan error, fn func(Event)) {
	defer close(l.done)
	for l.err == nil && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case l.err = <-errs:
		case ev := <-events:
			if t := eventType(ev); t != 0 {
				fn(Event{Type: t, Entry: entryOf(*ev.Flow)})
			}
		}
	}
	// Closing the socket waits for the library's worker, which may be
	// blocked handing over an event or an error: drain both meanwhile.
	closed := make(chan struct{})
	go func() { _ = c.Close(); close(closed) }()
	for {
		select {
		case <-closed:
			return
		case <-events:
		case <-errs:
		}
	}
}

func eventType(ev ct.Event) EventType {
	if ev.Flow == nil {
		return 0
	}
	switch ev.Type {
	case ct.EventNew:
		return EventNew
	case ct.EventUpdate:
		return EventUpdate
	case ct.EventDestroy:
		return EventDestroy
	}
	return 0
}

// Close stops the listener; once it returns fn is not called again. It
// returns the error that had stopped the listener before, if any
// (EventsLost: the kernel dropped events, the caller should dump instead).
func (l *Listener) Close() error {
	l.cancel()
	<-l.done
	return l.err
}

// Done is closed when the listener stops, by Close or by an error.
func (l *Listener) Done() <-chan struct{} { return l.done }

// EventsLost says whether err (from Close) means the kernel dropped events.
func EventsLost(err error) bool { return errors.Is(err, unix.ENOBUFS) }

// EnableAccounting turns on conntrack's packet and byte counters
// (net.netfilter.nf_conntrack_acct=1) in the caller's network namespace;
// entries made before keep counting nothing.
func EnableAccounting() error {
	const path = "/proc/sys/net/netfilter/nf_conntrack_acct"
	if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("enabling conntrack accounting: %w", err)
	}
	return nil
}
