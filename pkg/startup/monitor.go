package startup

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// Watchdog loop names.
const (
	loopMonitor = "monitor"
	loopTunnel  = "tunnel"
)

// runLoops runs the address monitor and the tunnel address loop with a watchdog that pets
// systemd only while both make progress.
func (s *Startup) runLoops(ctx context.Context) error {
	wd := daemon.NewWatchdog(s.notify, s.log, loopMonitor, loopTunnel)
	s.loopTimeout = min(opTimeout, wd.Limit()/2)
	var wg sync.WaitGroup
	for _, loop := range []func(context.Context, *daemon.Watchdog){s.monitorAddresses, s.tunnelLoop, runWatchdog} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(ctx, wd)
		}()
	}
	wg.Wait()
	return ctx.Err()
}

func runWatchdog(ctx context.Context, wd *daemon.Watchdog) { wd.Run(ctx) }

// beatInterval is how often an idle loop reports progress.
func beatInterval(wd *daemon.Watchdog) time.Duration { return max(wd.Limit()/3, 10*time.Millisecond) }

// monitorAddresses re-runs address configuration after host address changes (netlink events,
// debounced), every poll interval and, after a failure, with backoff, updating the Node when the
// result changed.
func (s *Startup) monitorAddresses(ctx context.Context, wd *daemon.Watchdog) {
	poll := time.NewTicker(s.cfg.PollInterval)
	defer poll.Stop()
	beat := time.NewTicker(beatInterval(wd))
	defer beat.Stop()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	delays := s.retry
	var debounce <-chan time.Time
	for {
		check := false
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
		case <-s.kernel.AddressEvents():
			if debounce == nil {
				debounce = time.After(s.debounce)
			}
		case <-debounce:
			debounce, check = nil, true
		case <-poll.C:
			check = true
		case <-retry.C:
			check = true
		}
		if check {
			if err := s.checkAddresses(ctx); err != nil && ctx.Err() == nil {
				delay := delays.Next()
				s.log.Error().Err(err).Dur("retryIn", delay).Msg("Updating node addresses failed")
				retry.Reset(delay)
			} else {
				retry.Stop()
				delays.Reset()
			}
		}
		wd.Beat(loopMonitor)
	}
}

// checkAddresses brings the Node's addresses and interfaces in line with the host.
func (s *Startup) checkAddresses(ctx context.Context) error {
	if s.cfg.Backend == BackendNone {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.loopTimeout)
	defer cancel()
	start := time.Now()
	ifaces, err := s.kernel.Interfaces()
	if err != nil {
		return fmt.Errorf("reading host interfaces: %w", err)
	}
	changed := false
	var node *api.Node
	err = s.updateNode(ctx, func(n *api.Node) (bool, error) {
		c, err := s.configureNode(ctx, n, ifaces)
		node, changed = n, c
		return c, err
	})
	s.metrics.onNodeUpdate(opAddresses, changed, node, err)
	if err != nil {
		return err
	}
	if changed {
		s.log.Info().Dur("took", time.Since(start)).Msg("Updated node addresses")
		s.line.event("node %s addresses updated at %s", s.name, time.Now().Format(time.RFC3339))
	}
	return nil
}

// tunnelLoop reconciles the VXLAN tunnel addresses whenever the pools or this Node change (as
// the syncer reports), every tunnelResync, and after failures with backoff. It also reports the
// pools' and the Node's settings that calico-host does not implement.
func (s *Startup) tunnelLoop(ctx context.Context, wd *daemon.Watchdog) {
	msgs := make(chan syncer.Message, 16)
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { s.watch(wctx, settingsPrefixes(s.name), msgs) })
	resync := time.NewTicker(s.tunnelResync)
	defer resync.Stop()
	beat := time.NewTicker(beatInterval(wd))
	defer beat.Stop()
	retry := time.NewTimer(0)
	<-retry.C
	trig := newTunnelTrigger(s.name)
	settings := newSettingsWatch(s.unimplemented)
	delays := s.retry
	for {
		run := false
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
		case m := <-msgs:
			s.line.datastore(m.Status)
			s.metrics.onStatus(m.Status)
			settings.apply(m)
			run = trig.apply(m)
		case <-resync.C:
			run = true
		case <-retry.C:
			run = true
		}
		wd.Beat(loopTunnel)
		if !run {
			continue
		}
		if err := s.reconcileWithTimeout(ctx); err != nil && ctx.Err() == nil {
			delay := delays.Next()
			s.log.Warn().Err(err).Dur("retryIn", delay).Msg("Reconciling tunnel addresses failed")
			retry.Reset(delay)
			continue
		}
		delays.Reset()
	}
}

func (s *Startup) reconcileWithTimeout(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.loopTimeout)
	defer cancel()
	return s.ReconcileTunnels(ctx)
}

// tunnelTrigger remembers the inputs of the tunnel decision (pool specs, this Node's labels and
// tunnel fields) and says whether a syncer message changed them.
type tunnelTrigger struct {
	node   string
	seen   bool
	inputs map[string]any // by key
}

func newTunnelTrigger(node string) *tunnelTrigger {
	return &tunnelTrigger{node: node, inputs: map[string]any{}}
}

type nodeTunnelInputs struct {
	labels                   map[string]string
	addr4, mac4, addr6, mac6 string
	wgKey4, wgKey6           string // published WireGuard public keys
	wgAddr4, wgAddr6         string
}

// apply folds a message in and reports whether a reconcile is due.
func (t *tunnelTrigger) apply(m syncer.Message) bool {
	next := make(map[string]any, len(t.inputs))
	if !m.Snapshot {
		for k, v := range t.inputs {
			next[k] = v
		}
	}
	for _, u := range m.Updates {
		if in, ok := t.relevant(u); ok {
			next[u.ID.Key()] = in
		} else {
			delete(next, u.ID.Key())
		}
	}
	changed := !reflect.DeepEqual(next, t.inputs) || (m.Snapshot && !t.seen)
	t.seen = t.seen || m.Snapshot
	t.inputs = next
	return changed && t.seen
}

// relevant extracts what matters for tunnel addresses from an update (false: absent).
func (t *tunnelTrigger) relevant(u syncer.Update) (any, bool) {
	switch v := u.Value.(type) {
	case *api.IPPool:
		return v.Spec, true
	case *api.Node:
		if id, ok := u.ID.(datastore.ResourceID); !ok || id.Name != t.node {
			return nil, false
		}
		in := nodeTunnelInputs{labels: v.Labels, addr4: v.Spec.IPv4VXLANTunnelAddr, mac4: v.Spec.VXLANTunnelMACAddr,
			addr6: v.Spec.IPv6VXLANTunnelAddr, mac6: v.Spec.VXLANTunnelMACAddrV6,
			wgKey4: v.Status.WireguardPublicKey, wgKey6: v.Status.WireguardPublicKeyV6}
		if w := v.Spec.Wireguard; w != nil {
			in.wgAddr4, in.wgAddr6 = w.InterfaceIPv4Address, w.InterfaceIPv6Address
		}
		return in, true
	}
	return nil, false
}

// statusLine is systemd's STATUS once the node is registered: the last thing done (registration,
// an address update) and, when the datastore is no longer in sync after it was, that first. The
// node stays as registered meanwhile; nothing is undone.
type statusLine struct {
	notify *daemon.Notifier

	mu     sync.Mutex
	last   string
	alert  string // a standing problem, shown after the last event (empty: none)
	ds     syncer.Status
	synced bool // the datastore was in sync at least once
}

// event records what was done last.
func (l *statusLine) event(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = fmt.Sprintf(format, args...)
	l.show()
}

// datastore records the datastore's status (as the tunnel loop's syncer reports it).
func (l *statusLine) datastore(st syncer.Status) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st == l.ds && (l.synced || st != syncer.InSync) {
		return
	}
	l.ds, l.synced = st, l.synced || st == syncer.InSync
	l.show()
}

// warn sets (or, with "", clears) the standing problem shown on STATUS.
func (l *statusLine) warn(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if msg == l.alert {
		return
	}
	l.alert = msg
	l.show()
}

func (l *statusLine) show() {
	last := l.last
	if l.alert != "" {
		last += "; WARNING: " + l.alert
	}
	switch {
	case l.last == "":
	case l.synced && l.ds == syncer.WaitingForDatastore:
		l.notify.Status("Datastore unreachable (%s); the node stays as registered; last: %s", l.ds, last)
	case l.synced && l.ds != syncer.InSync:
		l.notify.Status("Datastore %s; last: %s", l.ds, last)
	default:
		l.notify.Status("Ready: %s", last)
	}
}
