package fleet

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/time/rate"
)

// Options describe a run.
type Options struct {
	Hosts, Policies, NetSets int
	// Proxies is the number of grpc-proxies (0: agents use the members directly); agents are
	// spread over them in contiguous groups.
	Proxies int
	// FullAgents is the number of agents that run calc and keep state (the others are Light);
	// a negative value means all.
	FullAgents int
	// StartRate paces the cold start (agents per second; 0: all at once).
	StartRate float64
	// ChurnRate is changes per second (default Hosts/100, at least 1); ChurnFor the length of
	// the measured churn phase.
	ChurnRate float64
	ChurnFor  time.Duration
	// LivenessTimeout is the agents' syncer.Config.LivenessTimeout (0: the syncer's default). On
	// a machine where one process runs every agent, CPU starvation can look like a lost etcd.
	LivenessTimeout time.Duration
	// ProgressInterval is the members' --experimental-watch-progress-notify-interval (0: etcd's
	// default, 10 minutes). A grpc-proxy never answers a client's progress request, so behind
	// one a watch on a quiet prefix learns etcd's revision only from these notifications.
	ProgressInterval time.Duration
	// Disruptions runs the leader loss, compaction and proxy restart phases.
	Disruptions bool
	Tag         string
	KeepDir     bool
	Log         zerolog.Logger // the agents' syncers and calc graphs
	Logf        func(format string, args ...any)
}

func (o *Options) fill() {
	if o.ChurnRate <= 0 {
		o.ChurnRate = max(1, float64(o.Hosts)/100)
	}
	if o.FullAgents < 0 || o.FullAgents > o.Hosts {
		o.FullAgents = o.Hosts
	}
	if o.Tag == "" {
		o.Tag = "f"
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// Fleet is a running harness.
type Fleet struct {
	o      Options
	c      *Cluster
	admin  *clientv3.Client
	shape  Shape
	agents []*Agent
	meter  *meter
	churn  *churner
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
}

// Start starts the cluster and proxies and loads the data (no agent runs yet).
func Start(ctx context.Context, o Options) (*Fleet, error) {
	o.fill()
	f := &Fleet{o: o, shape: Shape{Hosts: o.Hosts, Policies: o.Policies, NetSets: o.NetSets}}
	var err error
	if f.c, err = StartCluster(ctx, o.Tag, o.Proxies, o.ProgressInterval, o.KeepDir); err != nil {
		return nil, err
	}
	if f.admin, err = f.c.AdminClient(); err != nil {
		f.Close()
		return nil, err
	}
	start := time.Now()
	keys, err := Load(ctx, f.admin, f.shape)
	if err != nil {
		f.Close()
		return nil, err
	}
	o.Logf("data: %d hosts x %d endpoints, %d policies, %d network sets: %d keys loaded in %s",
		o.Hosts, EndpointsPerHost, o.Policies, o.NetSets, keys, time.Since(start).Round(time.Millisecond))
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.churn = newChurner(f.admin, f.shape, o.ChurnRate, o.Logf)
	f.meter = newMeter(ctx, f.c, f.allAgents)
	return f, nil
}

// Close stops the agents and removes the cluster.
func (f *Fleet) Close() {
	if f.cancel != nil {
		f.churn.stop()
		f.cancel()
		f.wg.Wait()
	}
	for _, a := range f.allAgents() {
		for _, cli := range a.clients {
			cli.Close()
		}
	}
	if f.admin != nil {
		f.admin.Close()
	}
	f.c.Close()
}

func (f *Fleet) allAgents() []*Agent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Agent(nil), f.agents...)
}

// endpoint is the client URL agent i uses: its group's proxy, or member i%3.
func (f *Fleet) endpoint(i int) string {
	if f.o.Proxies > 0 {
		return ProxyEndpoint(i * f.o.Proxies / f.o.Hosts)
	}
	return MemberEndpoint(i % members)
}

// startAgent starts an agent for host i on endpoint.
func (f *Fleet) startAgent(i int, mode AgentMode, endpoint string) (*Agent, error) {
	var clis []*clientv3.Client
	for range 2 {
		cli, err := f.c.Client(endpoint)
		if err != nil {
			return nil, err
		}
		clis = append(clis, cli)
	}
	a := NewAgent(HostName(i), mode, clis[0], clis[1], f.o.Log.With().Str("host", HostName(i)).Logger())
	a.liveness = f.o.LivenessTimeout
	f.mu.Lock()
	f.agents = append(f.agents, a)
	f.mu.Unlock()
	f.wg.Go(func() { a.Run(f.ctx) })
	return a, nil
}

// ColdStart starts every agent (paced by StartRate) and waits until all are in sync.
func (f *Fleet) ColdStart(ctx context.Context, timeout time.Duration) (Usage, Dist, Dist, error) {
	f.meter.lap(ctx, "")
	lim := rate.NewLimiter(rate.Inf, 1)
	if f.o.StartRate > 0 {
		lim = rate.NewLimiter(rate.Limit(f.o.StartRate), 1)
	}
	var started []*Agent
	for i := range f.o.Hosts {
		if err := lim.Wait(ctx); err != nil {
			return Usage{}, Dist{}, Dist{}, err
		}
		mode := Light
		if i < f.o.FullAgents {
			mode = Full
		}
		a, err := f.startAgent(i, mode, f.endpoint(i))
		if err != nil {
			return Usage{}, Dist{}, Dist{}, err
		}
		started = append(started, a)
	}
	if err := f.waitInSync(ctx, started, timeout); err != nil {
		return Usage{}, Dist{}, Dist{}, err
	}
	u := f.meter.lap(ctx, "cold start")
	var fel, con []time.Duration
	for _, a := range started {
		fs, cs := a.SyncTimes()
		fel, con = append(fel, fs), append(con, cs)
	}
	return u, dist(fel), dist(con), nil
}

// waitInSync waits until every agent in as is in sync.
func (f *Fleet) waitInSync(ctx context.Context, as []*Agent, timeout time.Duration) error {
	return f.poll(ctx, timeout, func() error {
		missing := 0
		for _, a := range as {
			if !a.InSync() {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d agents not in sync", missing, len(as))
		}
		return nil
	})
}

// waitCaughtUp waits until every agent is in sync at etcd's current revision (or later).
func (f *Fleet) waitCaughtUp(ctx context.Context, timeout time.Duration) error {
	return f.waitRevision(ctx, 0, timeout)
}

// waitRevision waits until every agent is in sync at revision target (0: etcd's current one).
func (f *Fleet) waitRevision(ctx context.Context, target int64, timeout time.Duration) error {
	return f.poll(ctx, timeout, func() error {
		if target == 0 {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			resp, err := f.admin.Get(rctx, "caught-up-probe")
			cancel()
			if err != nil {
				return fmt.Errorf("reading etcd's revision: %w", err)
			}
			target = resp.Header.Revision
		}
		behind := 0
		for _, a := range f.allAgents() {
			if !a.InSync() || a.Revision() < target {
				behind++
			}
		}
		if behind > 0 {
			return fmt.Errorf("%d agents not in sync at revision %d", behind, target)
		}
		return nil
	})
}

func (f *Fleet) poll(ctx context.Context, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
