package dataplane

import (
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// Project Calico's table (live_migration.go), rows = inputs, columns = states, "" = no change.
func TestMigrationTransitionTable(t *testing.T) {
	b, tg, l, tw := migrationBase, migrationTarget, migrationLive, migrationTimeWait
	want := map[migrationInput][4]migrationState{
		//                 base  target live  timeWait
		inputTarget:    {tg, tg, l, tw},
		inputAnnounced: {b, l, l, tw},
		inputNoRole:    {b, tw, tw, tw},
		inputTimer:     {b, tg, l, b},
		inputSource:    {b, b, b, b},
		inputDeleted:   {b, b, b, b},
	}
	for in, row := range want {
		for s, next := range row {
			if got := nextMigrationState(migrationState(s), in); got != next {
				t.Errorf("%s + %s = %s, want %s", migrationState(s), in, got, next)
			}
		}
	}
}

// fakeClock records timers; fire runs one.
type fakeClock struct{ timers []*fakeTimer }

type fakeTimer struct {
	d       time.Duration
	f       func()
	stopped bool
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	tm := &fakeTimer{d: d, f: f}
	c.timers = append(c.timers, tm)
	return func() bool { was := !tm.stopped; tm.stopped = true; return was }
}

// fakeWatchers records watched interfaces; announce simulates a GARP on one.
type fakeWatchers struct {
	open    map[string]*fakeWatch
	missing map[string]bool
}

type fakeWatch struct {
	found  func()
	closed bool
}

func (w *fakeWatch) Close() error { w.closed = true; return nil }

func (fw *fakeWatchers) watch(iface string, found func()) (io.Closer, error) {
	if fw.missing[iface] {
		return nil, errors.New("no such interface")
	}
	w := &fakeWatch{found: found}
	fw.open[iface] = w
	return w, nil
}

type migrationRig struct {
	t     *testing.T
	m     *migrations
	clock *fakeClock
	fw    *fakeWatchers
	id    calc.WorkloadEndpointID
}

func newMigrationRig(t *testing.T) *migrationRig {
	r := &migrationRig{t: t, clock: &fakeClock{}, fw: &fakeWatchers{open: map[string]*fakeWatch{}, missing: map[string]bool{}},
		id: calc.WorkloadEndpointID{OrchestratorID: "openstack", WorkloadID: "openstack/inst-1", EndpointID: "port-1"}}
	r.m = newMigrations(zerolog.Nop(), r.clock, r.fw.watch, 30*time.Second)
	t.Cleanup(r.m.close)
	return r
}

func (r *migrationRig) role(role calc.MigrationRole) {
	r.m.observe(calc.WorkloadEndpointUpdate{ID: r.id, Endpoint: &calc.WorkloadEndpoint{Name: "tapport-1", LiveMigration: role}})
}

// deliver runs whatever event is waiting, as the dataplane loop does.
func (r *migrationRig) deliver() {
	r.t.Helper()
	select {
	case ev := <-r.m.events:
		r.m.onEvent(ev)
	default:
		r.t.Fatal("no event was sent")
	}
}

func (r *migrationRig) announce() {
	r.t.Helper()
	w := r.fw.open["tapport-1"]
	if w == nil || w.closed {
		r.t.Fatal("the interface is not being watched")
	}
	w.found()
	r.deliver()
}

func (r *migrationRig) fire() {
	r.t.Helper()
	tm := r.clock.timers[len(r.clock.timers)-1]
	if tm.stopped {
		r.t.Fatal("the timer was stopped")
	}
	tm.f()
	r.deliver()
}

func (r *migrationRig) want(s migrationState, mode routeMode) {
	r.t.Helper()
	f := r.m.fsms[r.id]
	state := migrationBase // an endpoint that never had a role has no machine: base
	if f != nil {
		state = f.state
	}
	if state != s || r.m.mode(r.id) != mode {
		r.t.Fatalf("state %s (%+v) mode %d, want %s mode %d", state, f, r.m.mode(r.id), s, mode)
	}
}

func TestMigrationHappyPath(t *testing.T) {
	r := newMigrationRig(t)
	r.role(calc.MigrationNone)
	r.want(migrationBase, routesNormal)
	if r.m.fsms[r.id] != nil {
		t.Fatal("an endpoint without a migration role got a state machine")
	}
	r.role(calc.MigrationTarget)
	r.want(migrationTarget, routesHeld)
	r.announce()
	r.want(migrationLive, routesElevated)
	if !r.fw.open["tapport-1"].closed {
		t.Error("the watcher stays open after the announcement")
	}
	r.role(calc.MigrationNone) // the LiveMigration is deleted: migration complete
	r.want(migrationTimeWait, routesElevated)
	if d := r.clock.timers[0].d; d != 30*time.Second {
		t.Errorf("timer %v, want the convergence time", d)
	}
	r.fire()
	r.want(migrationBase, routesNormal)
}

func TestMigrationMissedAnnouncement(t *testing.T) {
	r := newMigrationRig(t)
	r.role(calc.MigrationTarget)
	r.role(calc.MigrationNone)
	r.want(migrationTimeWait, routesElevated)
	if !r.fw.open["tapport-1"].closed {
		t.Error("the watcher stays open in timeWait")
	}
	r.fire()
	r.want(migrationBase, routesNormal)
}

// A source role (re-migration) or removal ends every non-base state, closing what it opened;
// a late announcement or timer of the old state is ignored.
func TestMigrationBackToBase(t *testing.T) {
	for _, end := range []string{"source", "deleted"} {
		for _, from := range []migrationState{migrationTarget, migrationLive, migrationTimeWait} {
			r := newMigrationRig(t)
			r.role(calc.MigrationTarget)
			w := r.fw.open["tapport-1"]
			if from >= migrationLive {
				r.announce()
			}
			if from == migrationTimeWait {
				r.role(calc.MigrationNone)
			}
			r.want(from, r.m.mode(r.id))
			if end == "source" {
				r.role(calc.MigrationSource)
				r.want(migrationBase, routesNormal)
			} else {
				r.m.observe(calc.WorkloadEndpointRemove{ID: r.id})
				if r.m.fsms[r.id] != nil || r.m.mode(r.id) != routesNormal {
					t.Fatalf("%s from %s: machine kept", end, from)
				}
			}
			if !w.closed {
				t.Errorf("%s from %s: watcher left open", end, from)
			}
			if from == migrationTimeWait && !r.clock.timers[0].stopped {
				t.Errorf("%s from %s: timer left running", end, from)
			}
			// Stale events: the old watcher's announcement and the old timer.
			w.found()
			if len(r.clock.timers) > 0 {
				r.clock.timers[0].f()
			}
			for len(r.m.events) > 0 {
				if r.m.onEvent(<-r.m.events) {
					t.Errorf("%s from %s: a stale event changed the routes", end, from)
				}
			}
		}
	}
}

// A no-role update in timeWait keeps the running timer; a timer of an earlier timeWait does not
// end a later one.
func TestMigrationTimeWaitTimers(t *testing.T) {
	r := newMigrationRig(t)
	r.role(calc.MigrationTarget)
	r.role(calc.MigrationNone)
	r.m.observe(calc.WorkloadEndpointUpdate{ID: r.id, Endpoint: &calc.WorkloadEndpoint{Name: "tapport-1"}})
	if len(r.clock.timers) != 1 {
		t.Fatalf("%d timers, want 1", len(r.clock.timers))
	}
	old := r.clock.timers[0]
	r.role(calc.MigrationSource)
	r.role(calc.MigrationNone)
	r.role(calc.MigrationTarget)
	r.role(calc.MigrationNone)
	old.f()
	if ev := <-r.m.events; r.m.onEvent(ev) {
		t.Fatal("an earlier timeWait's timer ended the current one")
	}
	r.want(migrationTimeWait, routesElevated)
	r.fire()
	r.want(migrationBase, routesNormal)
}

// An interface that does not exist yet is watched once it appears.
func TestMigrationWatchRetry(t *testing.T) {
	r := newMigrationRig(t)
	r.fw.missing["tapport-1"] = true
	r.role(calc.MigrationTarget)
	r.want(migrationTarget, routesHeld)
	if r.fw.open["tapport-1"] != nil {
		t.Fatal("watching a missing interface")
	}
	delete(r.fw.missing, "tapport-1")
	r.m.interfaceChanged("tapport-1")
	// The interface is re-created: the socket bound to the old one is replaced.
	old := r.fw.open["tapport-1"]
	r.m.interfaceChanged("tapport-1")
	if old == nil || !old.closed || r.fw.open["tapport-1"] == old {
		t.Fatal("a changed interface of a target is not watched anew")
	}
	r.announce()
	r.want(migrationLive, routesElevated)
}

// TestDesiredRoutesLiveMigration: a target's routes (addresses of both families) are held back,
// then carry IPv4/IPv6ElevatedRoutePriority once the workload announced itself, then the normal
// priorities after the convergence timer.
func TestDesiredRoutesLiveMigration(t *testing.T) {
	rc := RouteConfig{NormalPriority: 100, NormalPriorityV6: 200, ElevatedPriority: 10, ElevatedPriorityV6: 20}
	h := newHarness(t, Config{Hostname: "host1", IPv6Support: true, InterfacePrefixes: []string{"cali", "tap"}, Routes: rc})
	r := newMigrationRig(t)
	h.dp.migrations = r.m
	w := wep("w1", "tapport-1", []string{"10.65.0.1/32"}, withV6("fd5c::1/128"))
	r.id = w.ID
	w.Endpoint.LiveMigration = calc.MigrationTarget
	h.up("tapport-1")
	metrics := func() []int {
		var out []int
		for _, rt := range h.routes.routes() {
			out = append(out, rt.Metric)
		}
		return out
	}
	step := func(what string, want []int, ups ...calc.Update) {
		t.Helper()
		for _, u := range ups {
			r.m.observe(u)
		}
		h.send(ups...)
		if got := metrics(); !slices.Equal(got, want) {
			t.Errorf("%s: route metrics %v, want %v", what, got, want)
		}
	}
	step("target", nil, w)
	r.announce()
	step("announced", []int{10, 20})
	done := wep("w1", "tapport-1", []string{"10.65.0.1/32"}, withV6("fd5c::1/128"))
	step("migration over", []int{10, 20}, done)
	r.fire()
	step("converged", []int{100, 200})
}
