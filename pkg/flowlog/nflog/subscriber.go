package nflog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	gonflog "github.com/florianl/go-nflog/v2"
	"github.com/mdlayher/netlink"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Config says which group to read, where.
type Config struct {
	Group uint16
	// NetNS is a descriptor of the network namespace to read in (0: the
	// caller's).
	NetNS int
	// CopyRange bounds the bytes of each packet copied to us (a rule's
	// snaplen applies within it); 0 means DefaultCopyRange.
	CopyRange uint32
	// ReadBuffer is the socket's receive buffer in bytes; 0 leaves the
	// system's default. A full buffer loses messages (Stats.Overruns).
	ReadBuffer int
	// FlushTimeout is how long the kernel may hold messages to batch them
	// (10 ms steps); 0 keeps its default, 1 s (felix keeps it too).
	FlushTimeout time.Duration
	Log          zerolog.Logger
}

// DefaultCopyRange holds an IPv6 header with a few extension headers and a
// TCP header; felix's rules copy 80 bytes.
const DefaultCopyRange = 128

// Stats counts what a subscriber saw.
type Stats struct {
	Packets     uint64 // delivered to the callback
	ParseErrors uint64 // messages without a prefix or a parseable IP packet
	Overruns    uint64 // times the kernel dropped messages (ENOBUFS)
}

// Subscriber reads one NFLOG group until it is closed.
type Subscriber struct {
	nf                         *gonflog.Nflog
	cancel                     context.CancelFunc
	packets, badMsgs, overruns atomic.Uint64
	done                       chan struct{}
	log                        zerolog.Logger
	group                      uint16

	mu     sync.Mutex // held while fn runs; closed is set under it
	closed bool
}

// Subscribe binds to cfg.Group and calls fn for every logged packet, on one
// goroutine of its own, until ctx ends or Close. It returns once bound: the
// packets logged from then on reach fn. Only one socket can bind a group
// in a namespace; a second Subscribe to it fails.
func Subscribe(ctx context.Context, cfg Config, fn func(Packet)) (*Subscriber, error) {
	copyRange := cfg.CopyRange
	if copyRange == 0 {
		copyRange = DefaultCopyRange
	}
	nf, err := gonflog.Open(&gonflog.Config{
		Group: cfg.Group, Copymode: gonflog.CopyPacket, Bufsize: copyRange, NetNS: cfg.NetNS,
		Timeout: uint32((cfg.FlushTimeout + 9*time.Millisecond) / (10 * time.Millisecond)),
	})
	if err != nil {
		return nil, fmt.Errorf("opening NFLOG socket for group %d: %w", cfg.Group, err)
	}
	s := &Subscriber{nf: nf, done: make(chan struct{}), log: cfg.Log, group: cfg.Group}
	if err := s.setup(cfg); err != nil {
		_ = nf.Close()
		return nil, err
	}
	ctx, s.cancel = context.WithCancel(ctx)
	err = nf.RegisterWithErrorFunc(ctx, func(a gonflog.Attribute) int {
		s.deliver(a, fn)
		return 0
	}, s.onError)
	if err != nil {
		s.cancel()
		_ = nf.Close()
		return nil, fmt.Errorf("binding NFLOG group %d: %w", cfg.Group, err)
	}
	go func() {
		<-ctx.Done()
		_ = nf.Close()
		close(s.done)
	}()
	return s, nil
}

func (s *Subscriber) setup(cfg Config) error {
	// Report lost messages as ENOBUFS instead of silently (the library's
	// reads then return the error to onError).
	if err := s.nf.SetOption(netlink.NoENOBUFS, false); err != nil {
		return fmt.Errorf("NFLOG group %d: %w", cfg.Group, err)
	}
	if cfg.ReadBuffer > 0 {
		if err := s.nf.Con.SetReadBuffer(cfg.ReadBuffer); err != nil {
			return fmt.Errorf("NFLOG group %d: setting receive buffer: %w", cfg.Group, err)
		}
	}
	return nil
}

func (s *Subscriber) deliver(a gonflog.Attribute, fn func(Packet)) {
	if a.Prefix == nil || a.Payload == nil {
		s.badMsgs.Add(1)
		return
	}
	n, t, err := ParseIP(*a.Payload)
	if err != nil || !t.Valid() {
		s.badMsgs.Add(1)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.packets.Add(1)
		fn(Packet{Group: s.group, Prefix: *a.Prefix, Length: n, Tuple: t})
	}
}

// onError keeps reading through lost messages and timeouts and stops on
// anything else (the socket closed).
func (s *Subscriber) onError(err error) int {
	if errors.Is(err, unix.ENOBUFS) {
		if s.overruns.Add(1) == 1 {
			s.log.Warn().Uint16("group", s.group).Msg("NFLOG messages lost: the receive buffer overran")
		}
		return 0
	}
	var op *netlink.OpError
	if errors.As(err, &op) && (op.Timeout() || errors.Is(op.Err, unix.EINTR)) {
		return 0
	}
	select {
	case <-s.done:
	default:
		s.log.Debug().Err(err).Uint16("group", s.group).Msg("NFLOG reader stops")
	}
	return 1
}

// Stats returns the counts so far.
func (s *Subscriber) Stats() Stats {
	return Stats{Packets: s.packets.Load(), ParseErrors: s.badMsgs.Load(), Overruns: s.overruns.Load()}
}

// Close unbinds the group; once it returns, fn is not running and is not
// called again.
func (s *Subscriber) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	<-s.done
}
