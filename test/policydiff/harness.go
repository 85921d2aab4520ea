package policydiff

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

// harness is one host running calico-felix against etcd (both from topo), with the fixed
// workload, sentinel and outside namespaces of topology.go plumbed to it as Project Calico's
// CNI plugin does.
type harness struct {
	f       *topo.Fabric
	h       *topo.Host
	etcd    *clientv3.Client
	ns      map[string]*topo.Netns // slot name or "outside"
	tx      map[string]*sender
	rx      *receiver
	extMAC  net.HardwareAddr
	written map[string]bool // keys of the current scenario
}

// hostVethMAC is the MAC of every host-side workload veth (as the CNI plugin sets it); the
// workloads' IPv6 default gateway is its link-local address.
var hostVethMAC = net.HardwareAddr{0xee, 0xee, 0xee, 0xee, 0xee, 0xee}

// buildBinaries compiles calico-felix and devetcd into dir.
func buildBinaries(ctx context.Context, dir string) error {
	repo, err := topo.RepoRoot()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", "./cmd/calico-felix", "./test/devetcd")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building calico-felix and devetcd: %w: %s", err, out)
	}
	return nil
}

// newHarness builds the namespaces, starts etcd and felix and opens the packet sockets. With
// flowFlush set, felix writes flow logs (topo.Options.FlowLogsFlush).
func newHarness(ctx context.Context, bin string, logf func(string, ...any), flowFlush time.Duration) (_ *harness, err error) {
	f, err := topo.New(ctx, topo.Options{Tag: "ccdiff", Hosts: 1, IPv6: true, Bin: bin, Logf: logf,
		KeepDir: os.Getenv("E2E_KEEP") != "", FlowLogsFlush: flowFlush})
	if err != nil {
		return nil, err
	}
	hs := &harness{f: f, h: f.Host(1), ns: map[string]*topo.Netns{}, tx: map[string]*sender{}, rx: newReceiver(),
		written: map[string]bool{}}
	defer func() {
		if err != nil {
			hs.Close()
		}
	}()
	if hs.etcd, err = f.Etcd.Client(10 * time.Second); err != nil {
		return nil, err
	}
	if err := hs.writeBase(ctx); err != nil {
		return nil, err
	}
	for _, s := range append(localSlots(), sentinelSlots()...) {
		if err := hs.plumbWorkload(ctx, s); err != nil {
			return nil, err
		}
	}
	if err := hs.plumbOutside(ctx); err != nil {
		return nil, err
	}
	if err := hs.h.StartFelix(ctx); err != nil {
		return nil, err
	}
	return hs, hs.openSockets()
}

// Close stops the receivers and removes everything (topo's cleanup).
func (hs *harness) Close() {
	hs.rx.Close()
	for _, s := range hs.tx {
		s.Close()
	}
	if hs.etcd != nil {
		hs.etcd.Close()
	}
	hs.f.Close()
}

// writeBase writes what felix needs before any policy: the cluster is ready, the node exists.
func (hs *harness) writeBase(ctx context.Context) error {
	ready := true
	ci := &api.ClusterInformation{TypeMeta: api.TypeMeta{Kind: "ClusterInformation", APIVersion: api.APIVersion},
		ObjectMeta: api.ObjectMeta{Name: "default"},
		Spec:       api.ClusterInformationSpec{ClusterGUID: "0123456789abcdef0123456789abcdef", CalicoVersion: "v3.31.0", DatastoreReady: &ready}}
	node := &api.Node{TypeMeta: api.TypeMeta{Kind: "Node", APIVersion: api.APIVersion}, ObjectMeta: api.ObjectMeta{Name: localNode},
		Spec: api.NodeSpec{BGP: &api.NodeBGPSpec{IPv4Address: hs.h.Addr.String() + "/24"}}}
	for _, r := range []api.Resource{ci, node} {
		key, val, err := encode(r)
		if err != nil {
			return err
		}
		if _, err := hs.etcd.Put(ctx, key, string(val)); err != nil {
			return fmt.Errorf("writing %s: %w", key, err)
		}
	}
	return nil
}

func encode(r api.Resource) (string, []byte, error) {
	key, err := datastore.KeyOf(r)
	if err != nil {
		return "", nil, err
	}
	m := r.GetObjectMeta()
	if m.CreationTimestamp == "" {
		m.CreationTimestamp = "2026-01-02T03:04:05Z"
	}
	val, err := datastore.EncodeResource(r)
	return key, val, err
}

// ipIn runs "ip <args>" in a namespace.
func ipIn(ctx context.Context, ns *topo.Netns, lines ...string) error {
	for _, l := range lines {
		if _, err := ns.Exec(ctx, append([]string{"ip"}, strings.Fields(l)...)...); err != nil {
			return err
		}
	}
	return nil
}

// plumbWorkload creates a workload namespace wired as the calico CNI plugin wires a container:
// /32 and /128 on eth0, default routes via 169.254.1.1 and the host veth's link-local address.
// Felix programs the host side (routes, proxy ARP, forwarding).
func (hs *harness) plumbWorkload(ctx context.Context, s slot) error {
	_, ns, err := hs.h.NewContainerNetns(ctx)
	if err != nil {
		return err
	}
	hs.ns[s.Name] = ns
	if _, err := hs.h.Exec(ctx, "ip", "link", "add", s.Iface, "type", "veth", "peer", "name", "eth0", "netns", ns.Name); err != nil {
		return err
	}
	if _, err := ns.Exec(ctx, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.eth0.accept_dad=0"); err != nil {
		return err
	}
	if _, err := hs.h.Exec(ctx, "sysctl", "-qw", "net.ipv6.conf."+s.Iface+".accept_dad=0"); err != nil {
		return err
	}
	if err := ipIn(ctx, hs.h.NS, "link set "+s.Iface+" address "+hostVethMAC.String(), "link set "+s.Iface+" up"); err != nil {
		return err
	}
	return ipIn(ctx, ns,
		"addr add "+s.V4.String()+"/32 dev eth0",
		"-6 addr add "+s.V6.String()+"/128 dev eth0 nodad",
		"link set eth0 up",
		"route add 169.254.1.1 dev eth0 scope link",
		"route add default via 169.254.1.1 dev eth0",
		"-6 route add default via fe80::ecee:eeff:feee:eeee dev eth0")
}

// plumbOutside creates the outside namespace behind the host's uplink and routes the outside
// prefixes to it. The two ends know each other's addresses as permanent neighbours: a host
// endpoint on the uplink (or "*") applies normal policy to the host's own traffic, IPv6
// neighbour discovery included, which random policy may drop; forwarding must not depend on it.
func (hs *harness) plumbOutside(ctx context.Context) error {
	_, ns, err := hs.h.NewContainerNetns(ctx)
	if err != nil {
		return err
	}
	hs.ns[outside] = ns
	if _, err := hs.h.Exec(ctx, "ip", "link", "add", uplink, "type", "veth", "peer", "name", "eth0", "netns", ns.Name); err != nil {
		return err
	}
	if err := ipIn(ctx, ns, "addr add "+outsideV4.String()+"/24 dev eth0", "-6 addr add "+outsideV6.String()+"/64 dev eth0 nodad",
		"link set eth0 up", "route add default via "+extGatewayV4.String(), "-6 route add default via "+extGatewayV6.String()); err != nil {
		return err
	}
	lines := []string{"addr add " + extGatewayV4.String() + "/24 dev " + uplink, "-6 addr add " + extGatewayV6.String() + "/64 dev " + uplink + " nodad",
		"link set " + uplink + " up"}
	for _, r := range outsideRoutes {
		via := outsideV4
		if strings.Contains(r, ":") {
			via = outsideV6
		}
		lines = append(lines, "route add "+r+" via "+via.String())
	}
	if err := ipIn(ctx, hs.h.NS, lines...); err != nil {
		return err
	}
	if hs.extMAC, err = macOf(hs.h.NS, uplink); err != nil {
		return err
	}
	outMAC, err := macOf(ns, "eth0")
	if err != nil {
		return err
	}
	if err := ipIn(ctx, hs.h.NS, permanentNeighbours(uplink, outMAC, outsideV4, outsideV6)...); err != nil {
		return err
	}
	return ipIn(ctx, ns, permanentNeighbours("eth0", hs.extMAC, extGatewayV4, extGatewayV6)...)
}

// macOf is the MAC address of an interface in a namespace.
func macOf(ns *topo.Netns, iface string) (mac net.HardwareAddr, err error) {
	err = ns.Do(func() error {
		ifi, err := net.InterfaceByName(iface)
		if err == nil {
			mac = ifi.HardwareAddr
		}
		return err
	})
	return mac, err
}

// permanentNeighbours are the "ip" lines that make addrs neighbours at mac on dev.
func permanentNeighbours(dev string, mac net.HardwareAddr, addrs ...netip.Addr) []string {
	var out []string
	for _, a := range addrs {
		out = append(out, fmt.Sprintf("neigh replace %s lladdr %s dev %s nud permanent", a, mac, dev))
	}
	return out
}

// openSockets opens a sender and a receiver on eth0 of every namespace.
func (hs *harness) openSockets() error {
	for name, ns := range hs.ns {
		gw := hostVethMAC
		if name == outside {
			gw = hs.extMAC
		}
		s, err := newSender(ns, "eth0", gw)
		if err != nil {
			return err
		}
		hs.tx[name] = s
		if err := hs.rx.Listen(ns, name, "eth0"); err != nil {
			return err
		}
	}
	return nil
}

// apply writes a scenario's objects in one etcd transaction, deleting the previous scenario's
// objects that it does not have, and then, in a second transaction, the sentinel object. Felix
// applies the datastore in revision order, so once the sentinel's effect shows, everything of
// the first transaction is in force too. (One transaction for both is not enough: neither
// Project Calico's felix nor ours promises to apply all the events of one revision in one
// dataplane update, and under load ours sometimes does not.)
func (hs *harness) apply(ctx context.Context, objs []api.Resource, sentinel api.Resource) error {
	var ops []clientv3.Op
	keys := map[string]bool{}
	for _, r := range objs {
		key, val, err := encode(r)
		if err != nil {
			return err
		}
		keys[key] = true
		ops = append(ops, clientv3.OpPut(key, string(val)))
	}
	skey, sval, err := encode(sentinel)
	if err != nil {
		return err
	}
	keys[skey] = true
	for k := range hs.written {
		if !keys[k] {
			ops = append(ops, clientv3.OpDelete(k))
		}
	}
	if _, err := hs.etcd.Txn(ctx).Then(ops...).Commit(); err != nil {
		return fmt.Errorf("writing the scenario (%d operations): %w", len(ops), err)
	}
	if _, err := hs.etcd.Put(ctx, skey, string(sval)); err != nil {
		return fmt.Errorf("writing the sentinel: %w", err)
	}
	hs.written = keys
	return nil
}

// flushConntrack forgets every connection in the host namespace, so that no probe of an
// earlier scenario lets a later one through.
func (hs *harness) flushConntrack() error {
	return hs.h.NS.Do(func() error {
		for _, fam := range []netlink.InetFamily{netlink.FAMILY_V4, netlink.FAMILY_V6} {
			if _, err := netlink.ConntrackDeleteFilters(netlink.ConntrackTable, fam, everyFlow{}); err != nil {
				return fmt.Errorf("flushing conntrack: %w", err)
			}
		}
		return nil
	})
}

type everyFlow struct{}

func (everyFlow) MatchConntrackFlow(*netlink.ConntrackFlow) bool { return true }

// felixLog is the tail of felix's log, for failure messages.
func (hs *harness) felixLog() string {
	b, err := os.ReadFile(filepath.Join(hs.h.Logs, "felix.log"))
	if err != nil {
		return err.Error()
	}
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// dumpState writes the host's nftables ruleset, conntrack table, routes and neighbours to
// /tmp/policydiff-<name>.txt (debugging aid).
func (hs *harness) dumpState(ctx context.Context, t interface{ Logf(string, ...any) }, name string) {
	var b strings.Builder
	for _, cmd := range [][]string{{"nft", "list", "ruleset"}, {"ip", "route"}, {"ip", "-6", "route"}, {"ip", "neigh"}, {"ip", "-6", "neigh"},
		{"cat", "/proc/net/nf_conntrack"}} {
		out, err := hs.h.Exec(ctx, cmd...)
		fmt.Fprintf(&b, "### %s (%v)\n%s\n", strings.Join(cmd, " "), err, out)
	}
	file := "/tmp/policydiff-" + name + ".txt"
	os.WriteFile(file, []byte(b.String()), 0o644)
	t.Logf("DEBUG state dumped to %s", file)
}
