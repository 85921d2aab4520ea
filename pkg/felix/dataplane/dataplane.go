package dataplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/announce"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ruleset"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/vxlan"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/wireguard"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/ipip"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/apply"
	"github.com/calico-host/calico-host/pkg/nft/kernel"
)

// Dataplane programs this host from calc's update batches: the nftables tables (`ip calico` and
// `ip6 calico`, in one transaction per apply) through the nft Applier, routes, interface
// settings and VXLAN devices through the kernel pieces. Run drives
// it; nothing else may be called concurrently with Run except FirstApplyDone and Collectors.
type Dataplane struct {
	cfg            Config
	log            zerolog.Logger
	nft            *apply.Applier
	routes         RouteSyncer
	ifaces         Interfaces
	vxlan          VXLAN
	ipip           IPIP
	wg             WireGuard
	wgKeys         [2]wgtypes.Key     // private keys per IP version (zero when disabled)
	wgSharedLogged map[string]bool    // public keys shared by several hosts, as last logged
	wgManager      *wireguard.Manager // the netlink manager when the dataplane opened it (metrics)
	hostMTU        int                // the host MTU read at start (0: unknown)
	writtenMTU     int                // the workload MTU last written to cfg.MTUFile (0: none)
	timing         Timing
	after          func(int, error)
	closers        []func() // what New opened, closed when Run returns
	model          *model
	ruleset        *ruleset.Builder
	hostIfs        *ifaceMatcher
	status         *statusTracker
	workload       *workloadConfigurer
	metrics        *metrics
	quar           *quarantine
	firstApply     chan struct{}
	firstApplyDone bool
	bigCommit      bool // a big nftables transaction was committed since memory was last released (see bigCommitOps)
	ipipReport     ipipReport
	migrations     *migrations // live-migration state per local workload endpoint
	flowLogs       flowLogTables
}

// Timing tunes the loop. Zero fields take the defaults.
type Timing struct {
	Burst    int           // applies allowed back to back (default 10)
	Refill   time.Duration // time to earn one more apply (default 100 ms)
	RetryMin time.Duration // first retry delay after a failed apply (default 100 ms)
	RetryMax time.Duration // longest retry delay (default 10 s)
	IdleBeat time.Duration // progress is called at least this often (default 5 s)
}

func (t Timing) withDefaults() Timing {
	t.Burst = cmp.Or(t.Burst, 10)
	t.Refill = cmp.Or(t.Refill, 100*time.Millisecond)
	t.RetryMin = cmp.Or(t.RetryMin, 100*time.Millisecond)
	t.RetryMax = cmp.Or(t.RetryMax, 10*time.Second)
	t.IdleBeat = cmp.Or(t.IdleBeat, 5*time.Second)
	return t
}

// Option configures New.
type Option func(*options)

type options struct {
	kernel nft.Backend
	routes RouteSyncer
	ifaces Interfaces
	vxlan  VXLAN
	ipip   IPIP
	wg     WireGuard
	timing Timing
	// flowLogTables, when set, receives the prefix table of each ruleset applied (flow logs on).
	flowLogTables func(*ruleid.Table, int)
	// afterApply, when set, is called after every apply with the number of batches received
	// before it started and its result (tests use it to wait for the loop).
	afterApply func(batches int, err error)
}

// WithNFTBackend programs nftables through k (for example fake.New()) instead of netlink.
func WithNFTBackend(k nft.Backend) Option { return func(o *options) { o.kernel = k } }

// WithRoutes reconciles routes through r instead of netlink.
func WithRoutes(r RouteSyncer) Option { return func(o *options) { o.routes = r } }

// WithInterfaces monitors and configures interfaces through i instead of netlink.
func WithInterfaces(i Interfaces) Option { return func(o *options) { o.ifaces = i } }

// WithVXLAN manages the VXLAN devices through v instead of netlink.
func WithVXLAN(v VXLAN) Option { return func(o *options) { o.vxlan = v } }

// WithIPIP manages tunl0 through i instead of netlink.
func WithIPIP(i IPIP) Option { return func(o *options) { o.ipip = i } }

// WithWireGuard manages the WireGuard devices through w instead of netlink and wgctrl.
func WithWireGuard(w WireGuard) Option { return func(o *options) { o.wg = w } }

// WithTiming tunes the loop's throttle, retries and idle beat.
func WithTiming(t Timing) Option { return func(o *options) { o.timing = t } }

// WithFlowLogTables hands fn the NFLOG prefix table (package ruleid) of every ruleset the kernel
// accepted that changed it, with the count of verdict rules rendered without their log
// statement, on the dataplane's goroutine, after the apply and before the next one
// (Config.FlowLogs on): the flow collector then knows every prefix the kernel may log.
func WithFlowLogTables(fn func(t *ruleid.Table, unattributed int)) Option {
	return func(o *options) { o.flowLogTables = fn }
}

// withAfterApply calls fn after every apply of the loop.
func withAfterApply(fn func(batches int, err error)) Option {
	return func(o *options) { o.afterApply = fn }
}

// New builds a dataplane. It owns its kernel pieces: without options it programs nftables,
// routes, interfaces (monitor, sysctls, neighbours) and the VXLAN devices through netlink in
// cfg.NetNS ("" = felix's own namespace), enables IP forwarding there and writes the workload
// MTU file; the With* options replace pieces (tests). What New opens is closed when Run returns
// (or at once when New fails).
func New(cfg Config, log zerolog.Logger, opts ...Option) (*Dataplane, error) {
	log = log.With().Str("subcomponent", "dataplane").Logger()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("dataplane configuration: %w", err)
	}
	rcfg, err := cfg.rulesConfig()
	if err != nil {
		return nil, fmt.Errorf("dataplane configuration: %w", err)
	}
	d := &Dataplane{
		cfg: cfg, log: log, timing: o.timing.withDefaults(), after: o.afterApply,
		model: newModel(), hostIfs: newIfaceMatcher(cfg),
		status: newStatusTracker(), metrics: newMetrics(), firstApply: make(chan struct{}),
		flowLogs: flowLogTables{publish: o.flowLogTables},
	}
	d.model.gates = newEndpointGates(cfg, log)
	d.quar = newQuarantine(log)
	d.ruleset = ruleset.New(rcfg, cfg.TableName, log, d.quar.withheld)
	d.quar.source(d.ruleset, func(key string) any { return d.ruleset.ValueCurrent(d.model.weps, key) })
	if err := d.setKernel(o); err != nil {
		d.close()
		return nil, err
	}
	d.migrations = d.newMigrations()
	d.closers = append(d.closers, d.migrations.close)
	d.workload = &workloadConfigurer{ifaces: d.ifaces, ipv6: cfg.IPv6Support, openStack: cfg.OpenStack,
		noHostAddrs: cfg.Routes.SyncDisabled, configured: map[string]*calc.WorkloadEndpoint{}}
	return d, nil
}

// newMigrations builds the live-migration state machines on real timers, watching for
// announcements with AF_PACKET sockets in cfg.NetNS (unit tests replace them with fakes).
func (d *Dataplane) newMigrations() *migrations {
	watch := func(iface string, found func()) (io.Closer, error) { return announce.Watch(d.cfg.NetNS, iface, found) }
	return newMigrations(d.log, realClock{}, watch, d.cfg.LiveMigrationRouteConvergenceTime)
}

// setKernel wires the kernel pieces, opening netlink for those the options do not supply.
func (d *Dataplane) setKernel(o options) error {
	k := o.kernel
	if k == nil {
		nl, err := d.netlinkBackend()
		if err != nil {
			return err
		}
		k = nl
		d.closers = append(d.closers, func() { _ = nl.Close() })
	}
	d.nft = apply.New(k, apply.Options{Tables: ownedTables(d.cfg), Log: applierLogger(d.log)})
	if err := d.openPieces(&o); err != nil {
		return err
	}
	d.routes, d.ifaces, d.vxlan, d.ipip, d.wg = o.routes, o.ifaces, o.vxlan, o.ipip, o.wg
	return d.loadWireguardKeys()
}

// ownedTables are the tables the dataplane owns: `ip <name>` and `ip6 <name>` (deleted when
// IPv6 is off), and the `inet <name>` table of felix versions before per-version tables, which
// the first sync deletes in the transaction that creates the new tables (the old policy stays in
// force until the new one replaces it: no window without policy).
func ownedTables(cfg Config) []nft.TableID {
	return []nft.TableID{
		{Family: nft.FamilyIP, Name: cfg.TableName},
		{Family: nft.FamilyIP6, Name: cfg.TableName},
		{Family: nft.FamilyInet, Name: cfg.TableName},
	}
}

// netlinkBackend programs nftables through netlink in cfg.NetNS (the current namespace when
// unset). The backend keeps its own descriptor of the namespace, so ours is closed at once.
func (d *Dataplane) netlinkBackend() (*kernel.Backend, error) {
	var kc kernel.Config
	if d.cfg.NetNS != "" {
		f, err := os.Open(d.cfg.NetNS)
		if err != nil {
			return nil, fmt.Errorf("opening network namespace %s: %w", d.cfg.NetNS, err)
		}
		defer f.Close()
		kc.NetNS = int(f.Fd())
	}
	k, err := kernel.New(kc)
	if err != nil {
		return nil, fmt.Errorf("opening the nftables backend: %w", err)
	}
	return k, nil
}

// close releases what New opened, last first.
func (d *Dataplane) close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
	d.closers = nil
}

// applierLogger keeps the nft Applier's own per-sync info line out of the log (the dataplane
// logs one line per apply with the same counts) unless debugging: the logger's level, or the
// global one when the logger has none, is debug or lower.
func applierLogger(log zerolog.Logger) zerolog.Logger {
	if max(log.GetLevel(), zerolog.GlobalLevel()) <= zerolog.DebugLevel {
		return log
	}
	return log.Level(zerolog.WarnLevel)
}

// FirstApplyDone is closed after the first successful apply once calc and the interface
// monitor are in sync.
func (d *Dataplane) FirstApplyDone() <-chan struct{} { return d.firstApply }

// Collectors are the dataplane's Prometheus metrics.
func (d *Dataplane) Collectors() []prometheus.Collector {
	cs := d.metrics.collectors()
	if d.wgManager != nil && (d.cfg.Wireguard.Enabled || d.cfg.Wireguard.EnabledV6) {
		cs = append(cs, d.wgManager.Collector(d.cfg.Hostname))
	}
	return cs
}

// WireguardPeers reports how many WireGuard peers had a handshake in the last three minutes, of
// how many configured; on is false when WireGuard is off (or not managed by this dataplane).
func (d *Dataplane) WireguardPeers() (up, total int, on bool) {
	if d.wgManager == nil || !(d.cfg.Wireguard.Enabled || d.cfg.Wireguard.EnabledV6) {
		return 0, 0, false
	}
	up, total = d.wgManager.PeersUp(time.Now())
	return up, total, true
}

// apply programs everything from the model: VXLAN devices, the nftables table, workload
// interface settings, routes; then reports endpoint statuses. Any failure makes the next
// apply a full resync of nftables and routes.
func (d *Dataplane) apply(ctx context.Context) ([]EndpointStatus, error) {
	start := time.Now()
	d.updateWorkloadMTU()
	devs := vxlanDevices(d.cfg, d.model)
	hosts, hepIfaces := resolveHostEndpoints(d.model, d.hostIfs)
	in := d.model.rulesetInput(hosts, rulesVXLAN(devs), ipipWanted(d.cfg, d.model))
	d.quar.prepareSources(start)
	tables := d.buildTables(in, start)
	buildTime := time.Since(start)
	var errs []error
	if err := d.vxlan.Apply(ctx, devs); err != nil {
		errs = append(errs, fmt.Errorf("applying VXLAN devices: %w", err))
	}
	wgOn, wgOff := d.wireguardDevices()
	if err := d.wg.Apply(ctx, wgOn, wgOff); err != nil {
		errs = append(errs, fmt.Errorf("applying WireGuard: %w", err))
	}
	defer d.tightenGC()()
	st, err := d.applyTables(ctx, tables, in)
	d.metrics.observeQuarantine(d.quar.byKind())
	if err == nil && st.Ops >= bigCommitOps {
		d.bigCommit = true // released after the next successful apply, this one or a retry
	}
	if err != nil {
		d.metrics.failed()
		if !errors.As(err, new(*nft.CommitError)) { // after a refused batch the mirror is still exact
			d.nft.RequestFullSync()
		}
		d.routes.RequestResync()
		return nil, fmt.Errorf("applying nftables: %w", err)
	}
	var statuses []EndpointStatus
	network := d.model.netChanged || d.migrations.routesChanged
	if network {
		statuses, errs = d.applyNetwork(ctx, devs, wgOn, hepIfaces, errs)
	}
	d.logApply(st, time.Since(start), buildTime, network, len(errs))
	if len(errs) > 0 {
		d.metrics.failed()
		d.nft.RequestFullSync()
		d.routes.RequestResync()
		return statuses, errors.Join(errs...)
	}
	d.model.netChanged, d.migrations.routesChanged = false, false
	chains, sets := d.ruleset.Counts()
	d.metrics.observeApply(st, time.Since(start).Seconds(), chains, sets, len(d.model.weps), len(d.model.heps))
	return statuses, nil
}

// applyNetwork programs what follows the model's network state rather than its rules: workload
// interface settings, the IPIP device, routes; then it computes the endpoint statuses. apply
// skips it while neither the model's netChanged nor a live migration's route mode says that
// they may have changed (a policy, profile or IP set change: each of these steps walks every
// endpoint).
func (d *Dataplane) applyNetwork(ctx context.Context, devs []vxlan.Device, wgOn []wireguard.Device, hepIfaces map[string][]string, errs []error) ([]EndpointStatus, []error) {
	errs = append(errs, d.workload.configure(d.model)...)
	ipipState, err := d.ipip.Apply(ctx, ipipDevice(d.cfg, d.model, d.hostMTU))
	if err != nil {
		errs = append(errs, fmt.Errorf("applying the IPIP device: %w", err))
	}
	want, skipped := desiredRoutes(d.cfg, d.model, d.migrations, devs, ipipState == ipip.StateReady, wireguardRoutes(wgOn))
	setIPIPRouteMTU(want, ipipRouteMTU(d.cfg, d.hostMTU))
	d.reportIPIP(ipipState, skipped)
	if _, err := d.routes.Apply(ctx, want); err != nil {
		errs = append(errs, fmt.Errorf("applying routes: %w", err))
	}
	return d.status.update(d.model, d.workload.configured, hepIfaces), errs
}

// buildTables brings the desired tables up to date (see ruleset.Builder.Build), the quarantined
// objects replaced and the quarantined user values left out.
func (d *Dataplane) buildTables(in *ruleset.Input, now time.Time) []*nft.Table {
	for _, key := range d.quar.takeChanged() {
		d.ruleset.Invalidate(key)
	}
	d.quar.restore(d.ruleset.Tables())
	tables := d.ruleset.Build(in)
	d.model.rulesetBuilt(in)
	d.quar.enforce(tables, now)
	return tables
}

// rulesVXLAN are the VXLAN devices as the static chains need them.
func rulesVXLAN(devs []vxlan.Device) []rules.VXLANDevice {
	out := make([]rules.VXLANDevice, 0, len(devs))
	for _, d := range devs {
		out = append(out, rules.VXLANDevice{Name: d.Name, Version: versionOf(d.TunnelAddr)})
	}
	return out
}

// applyTables applies the tables; while the kernel refuses objects that may be quarantined,
// it quarantines them (building again when user values of the static chains are left out) and
// applies the rest again.
func (d *Dataplane) applyTables(ctx context.Context, tables []*nft.Table, in *ruleset.Input) (apply.Stats, error) {
	for round := 0; ; round++ {
		st, err := d.nft.Apply(ctx, tables...)
		if err == nil {
			d.quar.succeeded()
			d.flowLogs.applied(d.ruleset)
			return st, nil
		}
		now := time.Now()
		if round == maxQuarantineRounds || !d.quar.refused(tables, err, now) {
			return st, err
		}
		if len(d.quar.changed) > 0 {
			tables = d.buildTables(in, now)
		}
	}
}

// Quarantined counts the objects the kernel refused, now failing closed (for STATUS; the log
// and calico_host_felix_quarantined_objects name them). Safe to call from any goroutine.
func (d *Dataplane) Quarantined() int { return int(d.quar.count.Load()) }

func (d *Dataplane) logApply(st apply.Stats, total, build time.Duration, network bool, failures int) {
	d.log.Info().
		Bool("full", st.FullSync).
		Bool("network", network).
		Dur("duration", total).
		Dur("build", build).
		Dur("commit", st.CommitTime).
		Int("ops", st.Ops).
		Int("chainsAdded", st.ChainsAdded).
		Int("chainsRewritten", st.ChainsRewritten).
		Int("chainsDeleted", st.ChainsDeleted).
		Int("elementsAdded", st.ElementsAdded).
		Int("elementsRemoved", st.ElementsRemoved).
		Int("failures", failures).
		Msg("Applied dataplane")
}
