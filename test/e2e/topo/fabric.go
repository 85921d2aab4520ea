package topo

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/calico-host/calico-host/pkg/datastore"
)

// Mode is how workload traffic crosses hosts.
type Mode string

// Routing modes.
const (
	ModeBGP   Mode = "bgp"   // BIRD full mesh, no encapsulation
	ModeVXLAN Mode = "vxlan" // VXLAN Always, no BGP
)

// Addresses of the fabric.
var (
	FabricAddr  = netip.MustParseAddr("198.18.0.254") // br0, etcd, default gateway of the hosts
	FabricAddr6 = netip.MustParseAddr("fd5c:ff::fe")
	OutsideAddr = netip.MustParseAddr("198.18.1.1")   // the "internet"
	RouterOut   = netip.MustParseAddr("198.18.1.254") // the fabric's leg on the outside
	PoolV4      = netip.MustParsePrefix("10.65.0.0/16")
	PoolV6      = netip.MustParsePrefix("fd5c:1::/48")

	// OutsideAddr6 and RouterOut6 are the same for IPv6: the outside routes only the fabric's
	// fd5c:ff::/64 back (not the pools).
	OutsideAddr6 = netip.MustParseAddr("fd5c:fe::1")
	RouterOut6   = netip.MustParseAddr("fd5c:fe::fe")
)

// Options describe a fabric.
type Options struct {
	Tag         string // namespace tag (lower-case letters), default "cce2e"
	Hosts       int    // number of hosts, default 3
	Dir         string // configs, state and logs; default a new temporary directory
	KeepDir     bool   // keep Dir on Close
	Bin         string // directory holding the calico binaries and devetcd (see Build)
	Repo        string // repository root (confd templates); default found from the working directory
	Mode        Mode   // default ModeBGP
	IPv6        bool   // dual stack: IPv6 host addresses, pool and felix IPv6 support
	EtcdMembers int    // 1 (default) or 3
	Logf        func(format string, args ...any)

	// IPv6Only: the hosts have IPv6 only (implies IPv6): no IPv4 address, pool or BGP session,
	// etcd reached at [fd5c:ff::fe]:2379, BIRD's router id derived from the node name.
	IPv6Only bool
	// ProjectCalico lists hosts (1-based, never 1) that stand for Project Calico's calico-node:
	// Fabric.Start registers their Node and tunnel addresses as calico-node does and runs BIRD
	// 1.6 (BGP mode) or programs their VXLAN device (VXLAN mode) as Project Calico's confd and
	// felix would; no calico-host daemon runs there. Their workloads are plugged in by the CNI
	// plugin, which writes what Project Calico's plugin writes.
	ProjectCalico []int
	// FlowLogsFlush, when set, turns felix's flow log file on (Host.FlowLogFile) with this
	// FlowLogsFlushInterval, in whole seconds, in every host's felix.toml.
	FlowLogsFlush time.Duration
}

// Fabric is the whole simulated network and its etcd.
type Fabric struct {
	Opts    Options
	Tag     string // "<tag><pid>", the namespace name prefix
	Dir     string
	NS      *Netns // the fabric (bridge, router, etcd)
	Outside *Netns
	Etcd    *Etcd
	Hosts   []*Host

	undo   cleanups
	once   sync.Once
	dsMu   sync.Mutex
	ds     *datastore.Client
	closed bool
}

var fabricSeq struct {
	sync.Mutex
	n int
}

// New creates the namespaces, the bridge, the outside network, etcd and the hosts' namespaces
// (no daemon runs on the hosts yet: see Host.Start). On error everything created is removed.
func New(ctx context.Context, o Options) (*Fabric, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	fabricSeq.Lock()
	fabricSeq.n++
	seq := fabricSeq.n
	fabricSeq.Unlock()
	f := &Fabric{Opts: o, Tag: fmt.Sprintf("%s%d-%d", o.Tag, os.Getpid(), seq), Dir: o.Dir}
	register(f)
	if !o.KeepDir {
		f.undo.push(func() { os.RemoveAll(o.Dir) })
	}
	if err := f.build(ctx); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (o *Options) fill() error {
	if o.Tag == "" {
		o.Tag = "cce2e"
	}
	if o.Hosts == 0 {
		o.Hosts = 3
	}
	if o.Hosts > 200 {
		return errors.New("at most 200 hosts")
	}
	if o.Mode == "" {
		o.Mode = ModeBGP
	}
	if o.EtcdMembers == 0 {
		o.EtcdMembers = 1
	}
	if o.IPv6Only {
		o.IPv6 = true
		if o.EtcdMembers != 1 {
			return errors.New("IPv6Only takes a single etcd member")
		}
	}
	for _, i := range o.ProjectCalico {
		if i < 2 || i > o.Hosts {
			return fmt.Errorf("ProjectCalico host %d: must be 2..%d (host 1 creates the pools)", i, o.Hosts)
		}
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Repo == "" {
		root, err := RepoRoot()
		if err != nil {
			return err
		}
		o.Repo = root
	}
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "calico-e2e-")
		if err != nil {
			return err
		}
		o.Dir = d
	}
	return os.MkdirAll(o.Dir, 0o755)
}

func (f *Fabric) build(ctx context.Context) error {
	var err error
	if f.NS, err = f.newNetns(ctx, "fab"); err != nil {
		return err
	}
	if err := f.bridge(ctx); err != nil {
		return err
	}
	if err := f.outside(ctx); err != nil {
		return err
	}
	if f.Etcd, err = startEtcd(ctx, f, f.Opts.EtcdMembers); err != nil {
		return err
	}
	for i := 1; i <= f.Opts.Hosts; i++ {
		h, err := newHost(ctx, f, i)
		if err != nil {
			return err
		}
		f.Hosts = append(f.Hosts, h)
	}
	return nil
}

// newNetns creates "<Tag>-<role>", deleted on Close.
func (f *Fabric) newNetns(ctx context.Context, role string) (*Netns, error) {
	n, err := createNetns(ctx, f.Tag+"-"+role)
	if err != nil {
		return nil, err
	}
	f.undo.push(n.Delete)
	return n, nil
}

// bridge creates br0 in the fabric namespace and turns the namespace into a router.
func (f *Fabric) bridge(ctx context.Context) error {
	return f.NS.script(ctx,
		"link add br0 type bridge",
		"link set br0 up",
		"addr add "+FabricAddr.String()+"/24 dev br0",
		"-6 addr add "+FabricAddr6.String()+"/64 dev br0 nodad",
	)
}

// outside creates the "internet": a namespace behind the fabric router that can reach the hosts
// but has no route to the pools.
func (f *Fabric) outside(ctx context.Context) error {
	var err error
	if f.Outside, err = f.newNetns(ctx, "out"); err != nil {
		return err
	}
	if _, err := run(ctx, nil, "ip", "-n", f.NS.Name, "link", "add", "out0", "type", "veth", "peer", "name", "eth0", "netns", f.Outside.Name); err != nil {
		return err
	}
	if err := f.NS.script(ctx, "addr add "+RouterOut.String()+"/24 dev out0", "link set out0 up"); err != nil {
		return err
	}
	if err := f.NS.script(ctx, "-6 addr add "+RouterOut6.String()+"/64 dev out0 nodad"); err != nil {
		return err
	}
	if err := f.Outside.script(ctx, "addr add "+OutsideAddr.String()+"/24 dev eth0", "link set eth0 up",
		"route add 198.18.0.0/24 via "+RouterOut.String(), "-6 addr add "+OutsideAddr6.String()+"/64 dev eth0 nodad",
		"-6 route add fd5c:ff::/64 via "+RouterOut6.String()); err != nil {
		return err
	}
	_, err = f.NS.Exec(ctx, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")
	return err
}

// script runs "ip <line>" for each line inside the namespace.
func (n *Netns) script(ctx context.Context, lines ...string) error {
	for _, l := range lines {
		if _, err := run(ctx, nil, append([]string{"ip", "-n", n.Name}, splitFields(l)...)...); err != nil {
			return err
		}
	}
	return nil
}

// Close stops every process and removes every namespace (and Dir unless KeepDir). It is safe to
// call more than once and from a signal handler.
func (f *Fabric) Close() {
	f.once.Do(func() {
		f.dsMu.Lock()
		if f.ds != nil {
			f.ds.Close()
		}
		f.closed = true
		f.dsMu.Unlock()
		f.undo.run()
		unregister(f)
	})
}

// Host returns host i (1-based).
func (f *Fabric) Host(i int) *Host { return f.Hosts[i-1] }

// Datastore is a datastore client for the test or demo itself; it reaches etcd through a
// socket opened in the fabric namespace.
func (f *Fabric) Datastore() (*datastore.Client, error) {
	f.dsMu.Lock()
	defer f.dsMu.Unlock()
	if f.closed {
		return nil, errors.New("fabric closed")
	}
	if f.ds == nil {
		cli, err := f.Etcd.Client(10 * time.Second)
		if err != nil {
			return nil, err
		}
		f.ds = datastore.NewFromEtcd(cli)
	}
	return f.ds, nil
}

// LogDir is where the logs of every process are.
func (f *Fabric) LogDir() string { return filepath.Join(f.Dir, "logs") }

// Calicoctl runs calicoctl in the fabric namespace against etcd; stdin may be nil.
func (f *Fabric) Calicoctl(ctx context.Context, stdin string, args ...string) (string, error) {
	return f.NS.ExecInput(ctx, []byte(stdin), []string{"ETCD_ENDPOINTS=" + f.Etcd.EndpointList(), "DATASTORE_TYPE=etcdv3"},
		append([]string{filepath.Join(f.Opts.Bin, "calicoctl")}, args...)...)
}

// Apply runs "calicoctl apply -f -" with the given YAML.
func (f *Fabric) Apply(ctx context.Context, yaml string) error {
	_, err := f.Calicoctl(ctx, yaml, "apply", "-f", "-")
	return err
}

// NewProc describes an extra process run in the fabric namespace (log in LogDir/<name>.log),
// stopped on Close. Start it with Start.
func (f *Fabric) NewProc(name string, args ...string) *Proc {
	p := newProc(name, f.NS, filepath.Join(f.LogDir(), name+".log"), nil, args...)
	f.undo.push(func() { p.Stop() })
	return p
}
