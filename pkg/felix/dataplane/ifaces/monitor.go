package ifaces

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/internal/backoff"
)

// DefaultRefreshInterval is felix's InterfaceRefreshInterval default.
const DefaultRefreshInterval = 90 * time.Second

// Monitor reports interface states from kernel events, re-listing every interface periodically so
// that a lost event is repaired (only differences are reported).
type Monitor struct {
	h      Handle
	log    zerolog.Logger
	resync time.Duration

	byIndex map[int]*State
	// orphans holds addresses reported before their interface (the link and address events come
	// on separate sockets, so their order is not kept).
	orphans map[int][]netip.Prefix
}

// NewMonitor returns a monitor that lists everything again every resync (0 = never, besides
// after a subscription failure).
func NewMonitor(h Handle, log zerolog.Logger, resync time.Duration) *Monitor {
	return &Monitor{h: h, log: log, resync: resync}
}

// Run sends the state of every interface, then an InSync update, then changes as they happen,
// until ctx is done. If the kernel subscription fails it subscribes again and re-lists. Sends
// block, so the consumer must keep reading out.
func (m *Monitor) Run(ctx context.Context, out chan<- Update) {
	m.run(ctx, func(u Update) bool {
		select {
		case out <- u:
			return true
		case <-ctx.Done():
			return false
		}
	})
}

// emitFunc delivers an update; false means the monitor must stop.
type emitFunc func(Update) bool

func (m *Monitor) run(ctx context.Context, emit emitFunc) {
	m.byIndex, m.orphans = map[int]*State{}, map[int][]netip.Prefix{}
	retry := backoff.Backoff{Min: time.Second, Max: 30 * time.Second}
	for ctx.Err() == nil {
		if m.session(ctx, emit) {
			retry.Reset()
		}
		if retry.Wait(ctx) != nil {
			return
		}
	}
}

// session subscribes, lists, and follows events until the subscription breaks or ctx is done.
// It reports whether it got as far as listing.
func (m *Monitor) session(ctx context.Context, emit emitFunc) bool {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := m.h.Subscribe(sctx)
	if err != nil {
		m.log.Warn().Err(err).Msg("Subscribing to interface events failed; retrying")
		return false
	}
	if !m.fullSync(ctx, emit) {
		return false
	}
	timer := newJitterTimer(m.resync)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return true
		case ev, ok := <-events:
			if !ok {
				m.log.Warn().Msg("Interface event subscription ended; subscribing again")
				return true
			}
			if !m.handle(ev, emit) {
				return true
			}
		case <-timer.C():
			if !m.fullSync(ctx, emit) && ctx.Err() == nil {
				return true // listing failed: start over
			}
			timer.Reset()
		}
	}
}

// fullSync lists every interface, reports the differences from what was known, then InSync.
func (m *Monitor) fullSync(ctx context.Context, emit emitFunc) bool {
	states, err := m.h.ListInterfaces(ctx)
	if err != nil {
		m.log.Warn().Err(err).Msg("Listing interfaces failed")
		return false
	}
	next := make(map[int]*State, len(states))
	names := make(map[string]bool, len(states))
	for i := range states {
		s := states[i].clone()
		sortPrefixes(s.Addrs)
		next[s.Index] = s
		names[s.Name] = true
	}
	for idx, old := range m.byIndex {
		if n, ok := next[idx]; (!ok || n.Name != old.Name) && !names[old.Name] {
			if !emit(Update{Name: old.Name}) {
				return false
			}
		}
	}
	changed := 0
	for idx, s := range next {
		if old, ok := m.byIndex[idx]; ok && old.equal(s) {
			continue
		}
		changed++
		if !emit(Update{Name: s.Name, State: s.clone()}) {
			return false
		}
	}
	m.byIndex, m.orphans = next, map[int][]netip.Prefix{}
	m.log.Debug().Int("interfaces", len(next)).Int("changed", changed).Msg("Interfaces listed")
	return emit(Update{InSync: true})
}

// handle applies one event and reports the interface if its state changed.
func (m *Monitor) handle(ev Event, emit emitFunc) bool {
	switch ev.Kind {
	case LinkChanged:
		return m.linkChanged(ev.Link, emit)
	case LinkDeleted:
		delete(m.orphans, ev.Link.Index)
		old, ok := m.byIndex[ev.Link.Index]
		if !ok {
			return true
		}
		delete(m.byIndex, ev.Link.Index)
		return emit(Update{Name: old.Name})
	case AddrAdded, AddrDeleted:
		return m.addrChanged(ev, emit)
	}
	return true
}

func (m *Monitor) linkChanged(link State, emit emitFunc) bool {
	s := link.clone()
	old, known := m.byIndex[s.Index]
	switch {
	case known:
		s.Addrs = old.Addrs
		if old.Name != s.Name && !emit(Update{Name: old.Name}) { // renamed
			return false
		}
	default:
		s.Addrs = m.orphans[s.Index]
		delete(m.orphans, s.Index)
		sortPrefixes(s.Addrs)
	}
	if known && old.equal(s) {
		return true
	}
	m.byIndex[s.Index] = s
	return emit(Update{Name: s.Name, State: s.clone()})
}

func (m *Monitor) addrChanged(ev Event, emit emitFunc) bool {
	s, ok := m.byIndex[ev.Index]
	if !ok {
		if ev.Kind == AddrAdded {
			m.orphans[ev.Index], _ = withAddr(m.orphans[ev.Index], ev.Addr)
		} else {
			m.orphans[ev.Index], _ = withoutAddr(m.orphans[ev.Index], ev.Addr)
		}
		return true
	}
	var changed bool
	if ev.Kind == AddrAdded {
		s.Addrs, changed = withAddr(s.Addrs, ev.Addr)
	} else {
		s.Addrs, changed = withoutAddr(s.Addrs, ev.Addr)
	}
	if !changed {
		return true
	}
	return emit(Update{Name: s.Name, State: s.clone()})
}

// jitterTimer fires every period ±10% (Project Calico jitters its refresh timers); a zero period
// never fires.
type jitterTimer struct {
	period time.Duration
	t      *time.Timer
}

func newJitterTimer(period time.Duration) *jitterTimer {
	j := &jitterTimer{period: period}
	if period > 0 {
		j.t = time.NewTimer(j.next())
	}
	return j
}

func (j *jitterTimer) next() time.Duration {
	return j.period - j.period/10 + rand.N(j.period/5+1)
}

func (j *jitterTimer) C() <-chan time.Time {
	if j.t == nil {
		return nil
	}
	return j.t.C
}

func (j *jitterTimer) Reset() {
	if j.t != nil {
		j.t.Reset(j.next())
	}
}

func (j *jitterTimer) Stop() {
	if j.t != nil {
		j.t.Stop()
	}
}
