package dataplane

import (
	"io"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// Live migration (Project Calico's liveMigrationMonitor): each local workload endpoint runs a
// small state machine driven by its role (from calc), an announcement (gratuitous ARP or RARP)
// seen on its interface, and a convergence timer. It decides how the endpoint's routes are
// programmed:
//
//	state     routes                      entered on
//	base      normal priority             start; source role; removal; timer (from timeWait)
//	target    none (held back)            target role (from base)
//	live      elevated priority           announcement (from target)
//	timeWait  elevated priority           role gone (from target or live)
//
// so that while a VM moves, the old host keeps attracting its traffic until the VM runs here,
// then this host wins for LiveMigrationRouteConvergenceTime after the migration ends.
type migrationState uint8

const (
	migrationBase migrationState = iota
	migrationTarget
	migrationLive
	migrationTimeWait
)

func (s migrationState) String() string {
	return [...]string{"base", "target", "live", "timeWait"}[s]
}

// migrationInput is what drives the state machine.
type migrationInput uint8

const (
	inputNoRole migrationInput = iota
	inputSource
	inputTarget
	inputAnnounced
	inputTimer
	inputDeleted
)

func (i migrationInput) String() string {
	return [...]string{"noRole", "source", "target", "announced", "timer", "deleted"}[i]
}

// nextMigrationState is Project Calico's transition table; inputs not listed leave the state.
func nextMigrationState(s migrationState, in migrationInput) migrationState {
	switch {
	case s == migrationBase && in == inputTarget:
		return migrationTarget
	case s == migrationTarget && in == inputAnnounced:
		return migrationLive
	case (s == migrationTarget || s == migrationLive) && in == inputNoRole:
		return migrationTimeWait
	case s == migrationTimeWait && in == inputTimer:
		return migrationBase
	case s != migrationBase && (in == inputSource || in == inputDeleted):
		return migrationBase
	}
	return s
}

// routeMode is how an endpoint's routes are programmed.
type routeMode uint8

const (
	routesNormal routeMode = iota
	routesHeld
	routesElevated
)

// Clock starts timers; tests inject a fake one.
type Clock interface {
	// AfterFunc calls f in its own goroutine after d, unless stop is called first.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// announceWatcher watches an interface and calls found once on an announcement; closing the
// Closer stops it.
type announceWatcher func(iface string, found func()) (io.Closer, error)

// migrationEvent is an announcement or a timer, for the endpoint's state machine in generation
// gen; events of an earlier generation (the machine has moved on since) are stale and ignored.
type migrationEvent struct {
	id    calc.WorkloadEndpointID
	input migrationInput
	gen   uint64
}

// migrationFSM is one endpoint's machine.
type migrationFSM struct {
	state   migrationState
	role    calc.MigrationRole
	iface   string
	gen     uint64
	watcher io.Closer   // open in target
	stop    func() bool // the timer, running in timeWait
}

// migrations runs every local workload endpoint's machine. Its methods are called from the
// dataplane loop only; announcements and timers arrive on events.
type migrations struct {
	log         zerolog.Logger
	clock       Clock
	watch       announceWatcher
	convergence time.Duration
	events      chan migrationEvent
	done        chan struct{}
	fsms        map[calc.WorkloadEndpointID]*migrationFSM
	// routesChanged: a transition changed some endpoint's route mode since the dataplane last
	// applied its routes (it clears this).
	routesChanged bool
}

func newMigrations(log zerolog.Logger, clock Clock, watch announceWatcher, convergence time.Duration) *migrations {
	return &migrations{log: log, clock: clock, watch: watch, convergence: convergence,
		events: make(chan migrationEvent, 64), done: make(chan struct{}),
		fsms: map[calc.WorkloadEndpointID]*migrationFSM{}}
}

// observe feeds a calc update; it reports whether an endpoint's route mode changed.
func (m *migrations) observe(u calc.Update) bool {
	switch u := u.(type) {
	case calc.WorkloadEndpointUpdate:
		f := m.fsms[u.ID]
		if f == nil && u.Endpoint.LiveMigration == calc.MigrationNone {
			return false // no role and never had one: no machine (base state, normal routes)
		}
		if f == nil {
			f = &migrationFSM{}
			m.fsms[u.ID] = f
		}
		f.iface = u.Endpoint.Name
		if u.Endpoint.LiveMigration == f.role {
			return false
		}
		f.role = u.Endpoint.LiveMigration
		return m.input(u.ID, f, [...]migrationInput{inputNoRole, inputSource, inputTarget}[f.role])
	case calc.WorkloadEndpointRemove:
		f := m.fsms[u.ID]
		if f == nil {
			return false
		}
		changed := m.input(u.ID, f, inputDeleted)
		delete(m.fsms, u.ID)
		return changed
	}
	return false
}

// onEvent feeds an announcement or timer; it reports whether a route mode changed.
func (m *migrations) onEvent(ev migrationEvent) bool {
	f := m.fsms[ev.id]
	if f == nil || f.gen != ev.gen {
		return false
	}
	return m.input(ev.id, f, ev.input)
}

// interfaceChanged watches a migration target's interface again when it changes: it may not
// have existed when the endpoint became a target, or been re-created (a socket bound to the old
// one would never see the announcement).
func (m *migrations) interfaceChanged(name string) {
	for id, f := range m.fsms {
		if f.state != migrationTarget || f.iface != name {
			continue
		}
		if f.watcher != nil {
			_ = f.watcher.Close()
			f.watcher = nil
		}
		m.startWatch(id, f)
	}
}

// mode is how the endpoint's routes are to be programmed now.
func (m *migrations) mode(id calc.WorkloadEndpointID) routeMode {
	f := m.fsms[id]
	switch {
	case f == nil || f.state == migrationBase:
		return routesNormal
	case f.state == migrationTarget:
		return routesHeld
	}
	return routesElevated
}

// close stops every watcher and timer; pending event sends give up.
func (m *migrations) close() {
	close(m.done)
	for _, f := range m.fsms {
		m.leave(f)
	}
}

func (m *migrations) input(id calc.WorkloadEndpointID, f *migrationFSM, in migrationInput) bool {
	next := nextMigrationState(f.state, in)
	if next == f.state {
		return false
	}
	m.log.Info().Str("workload", id.WorkloadID).Str("endpoint", id.EndpointID).Stringer("input", in).
		Stringer("from", f.state).Stringer("to", next).Msg("Live migration state transition")
	before := m.mode(id)
	m.leave(f)
	f.state = next
	f.gen++
	switch next {
	case migrationTarget:
		m.startWatch(id, f)
	case migrationTimeWait:
		gen := f.gen
		f.stop = m.clock.AfterFunc(m.convergence, func() { m.send(migrationEvent{id, inputTimer, gen}) })
	}
	changed := m.mode(id) != before
	m.routesChanged = m.routesChanged || changed
	return changed
}

// leave undoes what the current state started.
func (m *migrations) leave(f *migrationFSM) {
	if f.watcher != nil {
		_ = f.watcher.Close()
		f.watcher = nil
	}
	if f.stop != nil {
		f.stop()
		f.stop = nil
	}
}

func (m *migrations) startWatch(id calc.WorkloadEndpointID, f *migrationFSM) {
	gen := f.gen
	w, err := m.watch(f.iface, func() { m.send(migrationEvent{id, inputAnnounced, gen}) })
	if err != nil {
		m.log.Warn().Err(err).Str("workload", id.WorkloadID).Str("endpoint", id.EndpointID).
			Msg("Cannot watch a live migration target's interface yet; its routes stay held back until it can be watched or the migration ends")
		return
	}
	f.watcher = w
}

// send delivers an event to the loop, or gives up once the dataplane has stopped.
func (m *migrations) send(ev migrationEvent) {
	select {
	case m.events <- ev:
	case <-m.done:
	}
}
