package fleet

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/time/rate"
)

// churner writes Shape.Change(i) at a steady rate in the background.
type churner struct {
	cli   *clientv3.Client
	shape Shape
	rate  float64
	logf  func(string, ...any)

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	n       int
	rec     bool
	written []written
	failed  int
}

type written struct {
	rev int64
	at  time.Time
}

func newChurner(cli *clientv3.Client, s Shape, r float64, logf func(string, ...any)) *churner {
	return &churner{cli: cli, shape: s, rate: r, logf: logf}
}

// start starts writing (record: remember each change's revision and start time).
func (c *churner) start(record bool) {
	c.stop()
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	c.cancel, c.done, c.rec, c.written, c.failed = cancel, make(chan struct{}), record, nil, 0
	c.mu.Unlock()
	go c.run(ctx)
}

func (c *churner) run(ctx context.Context) {
	defer close(c.done)
	lim := rate.NewLimiter(rate.Limit(c.rate), 1)
	for lim.Wait(ctx) == nil {
		c.mu.Lock()
		i := c.n
		c.n++
		c.mu.Unlock()
		key, val, err := c.shape.Change(i)
		if err != nil {
			c.logf("churn: %v", err)
			return
		}
		at := time.Now()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := c.cli.Put(wctx, key, val)
		cancel()
		c.mu.Lock()
		if err != nil && ctx.Err() == nil { // not the write cut short by stop
			c.failed++
		} else if err == nil && c.rec {
			c.written = append(c.written, written{rev: resp.Header.Revision, at: at})
		}
		c.mu.Unlock()
	}
}

// stop stops writing and returns what was recorded and how many writes failed.
func (c *churner) stop() ([]written, int) {
	c.mu.Lock()
	cancel, done := c.cancel, c.done
	c.cancel = nil
	c.mu.Unlock()
	if cancel == nil {
		return nil, 0
	}
	cancel()
	<-done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.written, c.failed
}

// Fanout is the latency from a change's write to its delivery: to each agent (every delivery),
// and to the last agent (per change).
type Fanout struct {
	Changes, Failed int
	Each, All       Dist
	Missed          int // deliveries that never happened within the phase
}

// Churn writes changes for d while every agent records deliveries, then waits until all have
// the last one.
func (f *Fleet) Churn(ctx context.Context, d time.Duration) (Usage, Fanout, error) {
	f.meter.lap(ctx, "")
	agents := f.allAgents()
	for _, a := range agents {
		a.Record(true)
	}
	f.churn.start(true)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	ws, failed := f.churn.stop()
	err := f.waitCaughtUp(ctx, 2*time.Minute)
	u := f.meter.lap(ctx, fmt.Sprintf("churn %.0f/s", f.o.ChurnRate))
	for _, a := range agents {
		a.Record(false)
	}
	fo := Fanout{Changes: len(ws), Failed: failed}
	var each, all []time.Duration
	for _, w := range ws {
		var last time.Duration
		complete := true
		for _, a := range agents {
			at, ok := a.deliveredAt(w.rev)
			if !ok {
				fo.Missed++
				complete = false
				continue
			}
			each = append(each, at.Sub(w.at))
			last = max(last, at.Sub(w.at))
		}
		if complete {
			all = append(all, last)
		}
	}
	fo.Each, fo.All = dist(each), dist(all)
	return u, fo, err
}

// disrupt runs one disruption with the churn running in the background, and waits until every
// agent is in sync at etcd's revision again; Usage.Recovery is the time from the disruption's
// start until then.
func (f *Fleet) disrupt(ctx context.Context, phase string, fn func() error) (Usage, error) {
	f.churn.start(false)
	defer f.churn.stop()
	f.meter.lap(ctx, "")
	start := time.Now()
	if err := fn(); err != nil {
		return Usage{}, fmt.Errorf("%s: %w", phase, err)
	}
	err := f.waitRevision(ctx, f.marker(ctx), 3*time.Minute)
	rec := time.Since(start)
	u := f.meter.lap(ctx, phase)
	u.Recovery = rec
	if err != nil {
		return u, fmt.Errorf("%s: agents did not recover: %w", phase, err)
	}
	return u, nil
}

// marker writes a change after a disruption and returns its revision (0 if etcd refused it for
// a minute): agents have recovered once they have it.
func (f *Fleet) marker(ctx context.Context) int64 {
	key, val, err := f.shape.Change(1 << 20)
	if err != nil {
		return 0
	}
	var rev int64
	f.poll(ctx, time.Minute, func() error {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := f.admin.Put(wctx, key, val)
		if err == nil {
			rev = resp.Header.Revision
		}
		return err
	})
	return rev
}

// Idle measures etcd with the agents in sync and nothing written, for d.
func (f *Fleet) Idle(ctx context.Context, d time.Duration) Usage {
	f.meter.lap(ctx, "")
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	return f.meter.lap(ctx, "idle")
}

// LeaderLoss kills the leader (SIGKILL), waits until the others elected a new one, and restarts it.
func (f *Fleet) LeaderLoss(ctx context.Context) (Usage, error) {
	return f.disrupt(ctx, "leader loss", func() error {
		old, err := f.c.Leader(ctx)
		if err != nil {
			return err
		}
		f.c.Members[old].Signal(syscall.SIGKILL, 10*time.Second)
		err = f.poll(ctx, time.Minute, func() error {
			l, err := f.c.Leader(ctx)
			if err == nil && l == old {
				err = fmt.Errorf("old leader still reported")
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("no new leader: %w", err)
		}
		if err := f.c.Members[old].Start(); err != nil {
			return err
		}
		return f.c.WaitHealthy(ctx, time.Minute)
	})
}

// Compaction compacts etcd's history up to its current revision.
func (f *Fleet) Compaction(ctx context.Context) (Usage, error) {
	return f.disrupt(ctx, "compaction", func() error {
		_, err := f.c.Compact(ctx)
		return err
	})
}

// ProxyRestart restarts every proxy at once (SIGTERM, then start).
func (f *Fleet) ProxyRestart(ctx context.Context) (Usage, error) {
	return f.disrupt(ctx, "proxy restart", func() error {
		for _, p := range f.c.Proxies {
			p.Stop()
		}
		for k := range f.c.Proxies {
			if err := f.c.StartProxy(ctx, k); err != nil {
				return err
			}
		}
		return nil
	})
}

// Verify waits until every agent is at etcd's revision, starts a fresh Full agent for each Full
// agent's host (directly on the members), and compares their states. It returns one error line
// per agent that differs.
func (f *Fleet) Verify(ctx context.Context) ([]string, error) {
	if err := f.waitCaughtUp(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	var olds, fresh []*Agent
	for i, a := range f.allAgents() {
		if a.Mode != Full {
			continue
		}
		n, err := f.startAgent(hostIndex(a.Host, f.o.Hosts), Full, MemberEndpoint(i%members))
		if err != nil {
			return nil, err
		}
		olds, fresh = append(olds, a), append(fresh, n)
	}
	if err := f.waitInSync(ctx, fresh, 2*time.Minute); err != nil {
		return nil, fmt.Errorf("fresh agents: %w", err)
	}
	if err := f.waitCaughtUp(ctx, time.Minute); err != nil {
		return nil, err
	}
	var diffs []string
	for i, a := range olds {
		if d := compareStates(a, fresh[i]); d != "" {
			diffs = append(diffs, d)
		}
	}
	return diffs, nil
}

func hostIndex(host string, n int) int {
	for i := range n {
		if HostName(i) == host {
			return i
		}
	}
	return -1
}

// compareStates describes how an agent's state differs from a fresh agent's ("" if equal).
func compareStates(a, fresh *Agent) string {
	got, err := a.State()
	if err != nil {
		return fmt.Sprintf("%s: calc output inconsistent: %v", a.Host, err)
	}
	want, err := fresh.State()
	if err != nil {
		return fmt.Sprintf("%s: the fresh agent's calc output is inconsistent: %v", a.Host, err)
	}
	if len(want) == 0 {
		return fmt.Sprintf("%s: the fresh agent has no calc output to compare with", a.Host)
	}
	gs, ws := map[string]bool{}, map[string]bool{}
	for _, l := range got {
		gs[l] = true
	}
	for _, l := range want {
		ws[l] = true
	}
	var only []string
	for _, l := range want {
		if !gs[l] {
			only = append(only, "- "+l)
		}
	}
	for _, l := range got {
		if !ws[l] {
			only = append(only, "+ "+l)
		}
	}
	if len(only) == 0 {
		return ""
	}
	sort.Strings(only)
	if len(only) > 10 {
		only = append(only[:10], fmt.Sprintf("... %d more", len(only)-10))
	}
	return fmt.Sprintf("%s: %d lines of %d differ from a fresh agent (-fresh +agent):\n  %s", a.Host, len(only),
		len(want), joinLines(only))
}

func joinLines(ls []string) string {
	out := ""
	for i, l := range ls {
		if i > 0 {
			out += "\n  "
		}
		out += l
	}
	return out
}
