package dataplane

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ifaces"
	"github.com/calico-host/calico-host/pkg/netnstest"
	"github.com/calico-host/calico-host/pkg/nft/kernel"
)

// Kernel tests run as root only, each in network namespaces it creates: a "host", one
// namespace per workload joined to it by a veth pair set up as the CNI plugin does, and a
// "fabric" standing in for the outside network. Addresses: workloads 10.65.0.x/32, host
// 198.18.0.1/24 on its eth0, fabric 198.18.0.2/24.

// Nothing a test of this package (or of dataplane_test) creates may program the test
// process's own namespace: a Dataplane without a NetNS, or with one that resolves to ours,
// fails its applies.
func init() { kernel.RefuseOwnNamespace() }

// topology is a host with workloads and a fabric.
type topology struct {
	host, fabric *netnstest.NS
	workloads    map[string]*netnstest.NS // by name
}

// newTopology builds the host and fabric namespaces joined by a veth pair (eth0 on both).
func newTopology(t testing.TB) *topology {
	netnstest.Require(t, "nft", "sysctl")
	tp := &topology{host: netnstest.New(t, "host"), fabric: netnstest.New(t, "fab"), workloads: map[string]*netnstest.NS{}}
	netnstest.Run(t, "ip", "link", "add", "eth0", "netns", tp.host.Name, "type", "veth", "peer", "name", "eth0", "netns", tp.fabric.Name)
	tp.host.Exec(t, "ip", "addr", "add", "198.18.0.1/24", "dev", "eth0")
	tp.host.Exec(t, "ip", "link", "set", "eth0", "up")
	tp.fabric.Exec(t, "ip", "addr", "add", "198.18.0.2/24", "dev", "eth0")
	tp.fabric.Exec(t, "ip", "link", "set", "eth0", "up")
	// A default route, so that proxy ARP answers for the workloads' gateway 169.254.1.1.
	tp.host.Exec(t, "ip", "route", "add", "default", "via", "198.18.0.2", "dev", "eth0")
	tp.host.Exec(t, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	return tp
}

// addWorkload plumbs a workload as the CNI plugin does: address /32 on eth0, a link route to
// 169.254.1.1 and the default route through it; on the host the interface and a /32 route.
func (tp *topology) addWorkload(t testing.TB, name, iface, ip string) *netnstest.NS {
	w := netnstest.New(t, name)
	netnstest.Run(t, "ip", "link", "add", iface, "netns", tp.host.Name, "type", "veth", "peer", "name", "eth0", "netns", w.Name)
	w.Exec(t, "ip", "addr", "add", ip+"/32", "dev", "eth0")
	w.Exec(t, "ip", "link", "set", "eth0", "up")
	w.Exec(t, "ip", "route", "add", "169.254.1.1", "dev", "eth0", "scope", "link")
	w.Exec(t, "ip", "route", "add", "default", "via", "169.254.1.1", "dev", "eth0")
	tp.host.Exec(t, "ip", "link", "set", iface, "up")
	tp.host.Exec(t, "ip", "route", "add", ip+"/32", "dev", iface, "scope", "link")
	tp.workloads[name] = w
	return w
}

// nsInterfaces is the Interfaces piece for kernel tests: it polls the namespace's links and
// addresses, and applies workload sysctls with sysctl(8) inside the namespace.
type nsInterfaces struct {
	t  testing.TB
	ns *netnstest.NS
}

func (n *nsInterfaces) Run(ctx context.Context, out chan<- ifaces.Update) {
	h, err := netlink.NewHandleAt(netns.NsHandle(n.ns.FD))
	if err != nil {
		n.t.Errorf("netlink handle: %v", err)
		return
	}
	defer h.Close()
	known := map[string]string{}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for synced := false; ; synced = true {
		for _, u := range pollInterfaces(h, known) {
			out <- u
		}
		if !synced {
			out <- ifaces.Update{InSync: true}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// pollInterfaces lists the links and reports those whose state changed since known.
func pollInterfaces(h *netlink.Handle, known map[string]string) []ifaces.Update {
	links, err := h.LinkList()
	if err != nil {
		return nil
	}
	var out []ifaces.Update
	seen := map[string]bool{}
	for _, l := range links {
		a := l.Attrs()
		st := &ifaces.State{Name: a.Name, Index: a.Index, Up: a.OperState == netlink.OperUp || a.OperState == netlink.OperUnknown && a.Flags&net.FlagUp != 0}
		u := ifaces.Update{Name: a.Name, State: st}
		addrs, _ := h.AddrList(l, netlink.FAMILY_ALL)
		for _, ad := range addrs {
			if p, ok := netip.AddrFromSlice(ad.IP); ok {
				ones, _ := ad.Mask.Size()
				st.Addrs = append(st.Addrs, netip.PrefixFrom(p.Unmap(), ones))
			}
		}
		seen[a.Name] = true
		if key := fmt.Sprint(*st); known[a.Name] != key {
			known[a.Name] = key
			out = append(out, u)
		}
	}
	for name := range known {
		if !seen[name] {
			delete(known, name)
			out = append(out, ifaces.Update{Name: name})
		}
	}
	return out
}

func (n *nsInterfaces) ConfigureWorkload(name string, _ bool) error {
	for _, kv := range []string{"proxy_arp=1", "forwarding=1", "route_localnet=1"} {
		if out, err := exec.Command("ip", "netns", "exec", n.ns.Name, "sysctl", "-qw", "net.ipv4.conf."+name+"."+kv).CombinedOutput(); err != nil {
			return fmt.Errorf("sysctl %s on %s: %v: %s", kv, name, err, out)
		}
	}
	if out, err := exec.Command("ip", "netns", "exec", n.ns.Name, "sysctl", "-qw", "net.ipv4.neigh."+name+".proxy_delay=0").CombinedOutput(); err != nil {
		return fmt.Errorf("proxy_delay on %s: %v: %s", name, err, out)
	}
	return nil
}

func (n *nsInterfaces) SetStaticNeighbors(string, net.HardwareAddr, []netip.Addr) error { return nil }
func (n *nsInterfaces) SetHostAddrs(string, []netip.Addr, bool) error                   { return nil }

// kernelDP is a Dataplane running its loop on the host namespace.
type kernelDP struct {
	t       testing.TB
	dp      *Dataplane
	in      chan []calc.Update
	status  chan EndpointStatus
	mu      sync.Mutex
	sent    int // batches sent
	applied int // batches covered by the last successful apply
	lastErr error
	cancel  context.CancelFunc
	done    chan struct{}
}

// startDataplane runs a Dataplane on the topology's host through netlink (with felix's defaults
// where cfg leaves a field zero, FelixDefaults), sends it ups plus InSync and waits for its first
// apply.
func startDataplane(t testing.TB, tp *topology, cfg Config, ups ...calc.Update) *kernelDP {
	t.Helper()
	return startDataplaneWith(t, tp, cfg, nil, ups...)
}

// startDataplaneWith is startDataplane with more options.
func startDataplaneWith(t testing.TB, tp *topology, cfg Config, opts []Option, ups ...calc.Update) *kernelDP {
	t.Helper()
	cfg.Hostname, cfg.NetNS = "host1", tp.host.Path()
	k := &kernelDP{t: t, in: make(chan []calc.Update), status: make(chan EndpointStatus, 1024), done: make(chan struct{})}
	opts = append([]Option{WithRoutes(nullRoutes{}), WithVXLAN(nullVXLAN{}),
		WithInterfaces(&nsInterfaces{t: t, ns: tp.host}), WithTiming(Timing{Refill: time.Millisecond}), withAfterApply(k.onApply)}, opts...)
	dp, err := New(FelixDefaults(cfg), testLogger(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	k.dp = dp
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	go func() {
		defer close(k.done)
		dp.Run(ctx, k.in, k.status, func() {})
	}()
	t.Cleanup(k.stop)
	k.send(append(slices.Clone(ups), calc.InSync{})...)
	return k
}

func (k *kernelDP) onApply(batches int, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lastErr = err
	if err == nil {
		k.applied = batches
	}
}

// send feeds a batch and waits until an apply that includes it succeeded.
func (k *kernelDP) send(ups ...calc.Update) {
	k.t.Helper()
	k.in <- ups
	k.mu.Lock()
	k.sent++
	k.mu.Unlock()
	k.waitApplied()
}

// requireProgrammed fails the test when the dataplane quarantined anything: an apply succeeds
// even when the kernel refused an object (it fails closed in its place), so tests that prove
// the kernel accepts what we render must look.
func (k *kernelDP) requireProgrammed() {
	k.t.Helper()
	if n := k.dp.Quarantined(); n != 0 {
		k.t.Fatalf("%d objects quarantined: the kernel refused what was rendered", n)
	}
}

// applyTimeout bounds waitApplied (tests of huge commits raise it; no test runs in parallel).
var applyTimeout = 10 * time.Second

// waitApplied waits for a successful apply of every batch sent.
func (k *kernelDP) waitApplied() {
	k.t.Helper()
	deadline := time.Now().Add(applyTimeout)
	for {
		k.mu.Lock()
		done, err := k.applied >= k.sent, k.lastErr
		k.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("the batches sent were not applied (last error: %v)", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitUp waits until the workload endpoint's status is "up" (its interface is configured).
func (k *kernelDP) waitUp(name string) {
	k.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case st := <-k.status:
			if st.Workload != nil && *st.Workload == wepID(name) && st.Status == "up" {
				return
			}
		case <-deadline:
			k.t.Fatalf("workload %s never reported up", name)
		}
	}
}

func (k *kernelDP) stop() {
	k.cancel()
	<-k.done
}

// TestDataplaneWithoutNetNSRefused: under the tests' guard, a Dataplane that would program
// this process's own namespace (no NetNS, or the namespace we are in) is refused when it is
// made, or cannot apply anything.
func TestDataplaneWithoutNetNSRefused(t *testing.T) {
	for _, path := range []string{"", "/proc/self/ns/net"} {
		dp, err := New(FelixDefaults(Config{Hostname: "host1", NetNS: path}), testLogger(t),
			WithRoutes(nullRoutes{}), WithInterfaces(nullInterfaces{}), WithVXLAN(nullVXLAN{}), WithIPIP(nullIPIP{}))
		if err != nil {
			if !strings.Contains(err.Error(), "own network namespace") {
				t.Errorf("NetNS %q: New returned %v, want a refusal", path, err)
			}
			continue
		}
		dp.model.inSync, dp.model.ifacesInSync = true, true
		if _, err := dp.apply(t.Context()); err == nil || !strings.Contains(err.Error(), "own network namespace") {
			t.Errorf("NetNS %q: apply returned %v, want a refusal", path, err)
		}
		dp.close()
	}
}
