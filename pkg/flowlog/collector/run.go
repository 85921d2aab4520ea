package collector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/conntrack"
	"github.com/calico-host/calico-host/pkg/flowlog/nflog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
)

// Loop says where the kernel's data comes from and where flows go.
type Loop struct {
	// NetNS is a descriptor of the network namespace to read (0: the
	// caller's).
	NetNS int
	// Poll is the period of conntrack dumps (DefaultPoll when 0); Flush the
	// flush interval (FlowLogsFlushInterval; required).
	Poll, Flush time.Duration
	// Tables delivers the prefix table of each ruleset applied.
	Tables <-chan *ruleid.Table
	// Out receives the flows of each interval, on the loop's goroutine.
	Out func([]flowlog.Flow)
	// ReadBuffer is the NFLOG sockets' receive buffer (bytes; 0: system
	// default); NFLOGFlush how long the kernel batches messages (0: its
	// default, 1 s).
	ReadBuffer int
	NFLOGFlush time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Ready, when set, is called once the NFLOG groups are bound: packets
	// logged from then on are collected.
	Ready func()
	// Dumped, when set, is told how long each conntrack dump took to read
	// from the kernel and to apply to the connections (on the loop's
	// goroutine; not for a dump that failed).
	Dumped func(read, process time.Duration)
}

// DefaultPoll is felix's conntrack polling interval.
const DefaultPoll = 5 * time.Second

// Run reads NFLOG groups 1 and 2 and dumps conntrack, feeding the collector,
// and hands the flows to l.Out every l.Flush, until ctx ends (then it
// flushes once more). It fails only if it cannot start.
func (c *Collector) Run(ctx context.Context, l Loop) error {
	if l.Flush <= 0 || l.Out == nil {
		return errors.New("flow collector: no flush interval or output")
	}
	if l.Poll <= 0 {
		l.Poll = DefaultPoll
	}
	if l.Now == nil {
		l.Now = time.Now
	}
	packets := make(chan nflog.Packet, 4096)
	subs, err := c.subscribe(ctx, l, packets)
	if err != nil {
		return err
	}
	c.subs = subs
	defer func() {
		for _, s := range subs {
			s.Close()
		}
	}()
	ct, err := conntrack.Open(l.NetNS)
	if err != nil {
		return err
	}
	defer ct.Close()
	if l.Ready != nil {
		l.Ready()
	}
	c.loop(ctx, l, packets, ct)
	return nil
}

func (c *Collector) subscribe(ctx context.Context, l Loop, packets chan<- nflog.Packet) ([]*nflog.Subscriber, error) {
	var subs []*nflog.Subscriber
	for _, g := range []uint16{ruleid.IngressGroup, ruleid.EgressGroup} {
		s, err := nflog.Subscribe(ctx, nflog.Config{Group: g, NetNS: l.NetNS, ReadBuffer: l.ReadBuffer,
			FlushTimeout: l.NFLOGFlush, Log: c.cfg.Log},
			func(p nflog.Packet) {
				select { // blocking here backs up the socket: the kernel then reports lost messages
				case packets <- p:
				case <-ctx.Done():
				}
			})
		if err != nil {
			for _, s := range subs {
				s.Close()
			}
			return nil, fmt.Errorf("flow collector: %w", err)
		}
		subs = append(subs, s)
	}
	return subs, nil
}

func (c *Collector) loop(ctx context.Context, l Loop, packets <-chan nflog.Packet, ct *conntrack.Reader) {
	poll, flush := time.NewTicker(l.Poll), time.NewTicker(l.Flush)
	defer poll.Stop()
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			c.dump(ct, l.Dumped)
			l.Out(c.Flush(l.Now()))
			return
		case t := <-l.Tables:
			c.SetTable(t)
		case p := <-packets:
			c.OnPacket(p, l.Now())
		case <-poll.C:
			c.dump(ct, l.Dumped)
		case <-flush.C:
			c.dump(ct, l.Dumped)
			l.Out(c.Flush(l.Now()))
		}
	}
}

func (c *Collector) dump(ct *conntrack.Reader, timed func(read, process time.Duration)) {
	start := time.Now()
	entries, err := ct.Dump()
	if err != nil {
		c.cfg.Log.Warn().Err(err).Msg("conntrack dump failed; counters wait for the next one")
		return
	}
	read := time.Since(start)
	c.OnDump(entries)
	if timed != nil {
		timed(read, time.Since(start)-read)
	}
}
