package calc

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// fakeClock is a manual clock for Run.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []fakeTimer
	armed  chan time.Duration // every After call, in order
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1000, 0), armed: make(chan time.Duration, 100)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.timers = append(c.timers, fakeTimer{at: c.now.Add(d), ch: ch})
	c.armed <- d
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.ch <- c.now
		} else {
			kept = append(kept, t)
		}
	}
	c.timers = kept
}

// waitArmed waits for an After call with the given duration.
func (c *fakeClock) waitArmed(t *testing.T, want time.Duration) {
	t.Helper()
	for {
		select {
		case d := <-c.armed:
			if d == want {
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no timer of %v armed", want)
		}
	}
}

func recvBatch(t *testing.T, out <-chan []Update) []Update {
	t.Helper()
	select {
	case b := <-out:
		return b
	case <-time.After(5 * time.Second):
		t.Fatal("no batch")
	}
	return nil
}

func countWEPs(batch []Update) int {
	n := 0
	for _, u := range batch {
		if _, ok := u.(WorkloadEndpointUpdate); ok {
			n++
		}
	}
	return n
}

func TestRunRateLimitsAndCoalesces(t *testing.T) {
	clk := newFakeClock()
	in, out := make(chan syncer.Message), make(chan []Update, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	beats := 0
	done := make(chan struct{})
	g := newTestGraph("h1")
	cfg := RunConfig{BucketSize: 2, Refill: 100 * time.Millisecond, Now: clk.Now, After: clk.After, IdleBeat: time.Hour}
	go func() {
		NewLoop(g, cfg).Run(ctx, in, out, func() { mu.Lock(); beats++; mu.Unlock() })
		close(done)
	}()
	msg := func(i int) syncer.Message {
		return syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{
			wep("ns", "h1", fmt.Sprint(i), nil, []string{fmt.Sprintf("10.65.0.%d/32", i)})}}
	}
	in <- syncer.Message{Status: syncer.InSync, Snapshot: true}
	if b := recvBatch(t, out); len(b) == 0 {
		t.Fatal("empty first batch")
	}
	in <- msg(1) // the second token
	if b := recvBatch(t, out); countWEPs(b) != 1 {
		t.Fatalf("second batch = %v", b)
	}
	in <- msg(2) // no token left: the flush waits for a refill
	clk.waitArmed(t, 100*time.Millisecond)
	in <- msg(3)
	in <- msg(4)
	select {
	case b := <-out:
		t.Fatalf("flushed without a token: %v", b)
	case <-time.After(50 * time.Millisecond):
	}
	clk.Advance(100 * time.Millisecond)
	if b := recvBatch(t, out); countWEPs(b) != 3 {
		t.Fatalf("coalesced batch has %d endpoints, want 3", countWEPs(b))
	}
	clk.Advance(time.Hour) // the idle beat
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := beats
		mu.Unlock()
		if n >= 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress called %d times", n)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return on cancel")
	}
}

// recordingObserver records what an EndpointObserver is told.
type recordingObserver struct {
	mu     sync.Mutex
	events []string
}

func (r *recordingObserver) KnownWorkload(id WorkloadEndpointID, exists bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("wep %s %v", id.EndpointID, exists))
}

func (r *recordingObserver) KnownHostEndpoint(name string, exists bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("hep %s %v", name, exists))
}

func (r *recordingObserver) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// waitFacts waits until the loop's facts satisfy ok.
func waitFacts(t *testing.T, l *Loop, what string, ok func(Facts) bool) Facts {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		if f := l.Facts(); ok(f) {
			return f
		}
		select {
		case <-l.FactsChanged():
		case <-deadline:
			t.Fatalf("facts never showed %s: %+v", what, l.Facts())
		}
	}
}

// TestLoopHoldsABatchUntilTaken: the loop never blocks on the dataplane. While nobody takes its
// first batch it keeps applying messages, and its facts follow them; once the batch is taken,
// the next one carries the net effect of everything since.
func TestLoopHoldsABatchUntilTaken(t *testing.T) {
	in, out := make(chan syncer.Message), make(chan []Update) // unbuffered: nobody reads yet
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := NewLoop(newTestGraph("h1"), RunConfig{IdleBeat: time.Hour})
	go l.Run(ctx, in, out, nil)
	ci := func(ready bool) syncer.Update {
		return up(resKey("clusterinformations", "", "default"), &api.ClusterInformation{Spec: api.ClusterInformationSpec{DatastoreReady: &ready}})
	}
	in <- syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: []syncer.Update{ci(false),
		wep("ns", "h1", "1", nil, []string{"10.65.0.1/32"})}}
	waitFacts(t, l, "the snapshot", func(f Facts) bool { return f.InSync && f.Config.ClusterInfo && f.Workloads == 1 })
	for i := 2; i <= 4; i++ {
		in <- syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{wep("ns", "h1", fmt.Sprint(i), nil, []string{fmt.Sprintf("10.65.0.%d/32", i)})}}
	}
	in <- syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{ci(true)}}
	waitFacts(t, l, "datastoreReady", func(f Facts) bool { return f.Config.DatastoreReady })
	first := recvBatch(t, out)
	if countWEPs(first) != 1 || first[len(first)-1] != (InSync{}) {
		t.Fatalf("first batch has %d endpoints (want the snapshot's 1) and ends with %T", countWEPs(first), first[len(first)-1])
	}
	if second := recvBatch(t, out); countWEPs(second) != 3 {
		t.Fatalf("second batch has %d endpoints, want the 3 added meanwhile", countWEPs(second))
	}
	waitFacts(t, l, "4 workloads", func(f Facts) bool { return f.Workloads == 4 })
}

// TestLoopObservers: an observer added late learns every endpoint sent so far, then each change.
func TestLoopObservers(t *testing.T) {
	in, out := make(chan syncer.Message), make(chan []Update, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := NewLoop(newTestGraph("h1"), RunConfig{IdleBeat: time.Hour})
	go l.Run(ctx, in, out, nil)
	in <- syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: []syncer.Update{
		wep("ns", "h1", "1", nil, []string{"10.65.0.1/32"}), wep("ns", "other", "2", nil, []string{"10.65.0.2/32"})}}
	recvBatch(t, out)
	obs := &recordingObserver{}
	if !l.Observe(ctx, obs) {
		t.Fatal("Observe failed")
	}
	if got := obs.list(); !slices.Equal(got, []string{"wep eth0 true"}) {
		t.Fatalf("Observe returned before the replay: %q", got)
	}
	in <- syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{del(wepKey("ns", "h1", "1"))}}
	recvBatch(t, out)
	deadline := time.Now().Add(5 * time.Second)
	want := []string{"wep eth0 true", "wep eth0 false"}
	for got := obs.list(); !slices.Equal(got, want); got = obs.list() {
		if time.Now().After(deadline) {
			t.Fatalf("observer told %q, want %q", got, want)
		}
		time.Sleep(time.Millisecond)
	}
	if f := l.Facts(); f.Workloads != 0 {
		t.Errorf("facts count %d workloads after the removal", f.Workloads)
	}
}

// TestLoopOnMessage: RunConfig.OnMessage sees every message, in order (felix's pending feed
// keeps its copy there).
func TestLoopOnMessage(t *testing.T) {
	in, out := make(chan syncer.Message), make(chan []Update, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen []string // the first key of each message, written on the loop's goroutine
	l := NewLoop(newTestGraph("h1"), RunConfig{IdleBeat: time.Hour, OnMessage: func(m syncer.Message) {
		seen = append(seen, m.Updates[0].ID.Key())
	}})
	go l.Run(ctx, in, out, nil)
	w1, w2 := wep("ns", "h1", "1", nil, []string{"10.65.0.1/32"}), wep("ns", "h1", "2", nil, []string{"10.65.0.2/32"})
	in <- syncer.Message{Status: syncer.InSync, Snapshot: true, Updates: []syncer.Update{w1}}
	in <- syncer.Message{Status: syncer.InSync, Updates: []syncer.Update{w2}}
	waitFacts(t, l, "2 workloads", func(f Facts) bool { return f.Workloads == 2 })
	if !slices.Equal(seen, []string{w1.ID.Key(), w2.ID.Key()}) {
		t.Errorf("OnMessage saw %q, want both messages in order", seen)
	}
}
