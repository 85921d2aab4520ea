package cni_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"

	types100 "github.com/containernetworking/cni/pkg/types/100"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

func resultAddrs(t *testing.T, r *types100.Result) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	for _, ip := range r.IPs {
		a, _ := netip.AddrFromSlice(ip.Address.IP)
		ones, _ := ip.Address.Mask.Size()
		out = append(out, netip.PrefixFrom(a.Unmap(), ones))
		if ip.Interface == nil || *ip.Interface != 1 {
			t.Errorf("IP %v does not point at the container interface", ip.Address)
		}
	}
	return out
}

// TestLibcniAddPingCheckDel networks two containers through libcni, pings between them, repeats
// an ADD, runs CHECK and removes everything again.
func TestLibcniAddPingCheckDel(t *testing.T) {
	r := newRig(t)
	c1, c2 := r.netns("c"), r.netns("c")
	rc1, rc2 := rt("ctr-one-0123456789", "/var/run/netns/"+c1), rt("ctr-two-0123456789", "/var/run/netns/"+c2)
	res1, err := r.add("1.0.0", rc1)
	if err != nil {
		t.Fatalf("ADD 1: %v", err)
	}
	res2, err := r.add("1.0.0", rc2)
	if err != nil {
		t.Fatalf("ADD 2: %v", err)
	}
	a1, a2 := resultAddrs(t, res1), resultAddrs(t, res2)
	if len(a1) != 2 || !a1[0].Addr().Is4() || a1[0].Bits() != 32 || a1[1].Bits() != 128 ||
		!netip.MustParsePrefix("10.65.0.0/16").Contains(a1[0].Addr()) || !netip.MustParsePrefix("fd5c:1::/64").Contains(a1[1].Addr()) {
		t.Fatalf("result addresses %v", a1)
	}
	if res1.Interfaces[0].Name != "calictr-one-012" || res1.Interfaces[1].Name != "eth0" || res1.Interfaces[1].Mtu != 1410 ||
		res1.Interfaces[1].Sandbox != rc1.NetNS || len(res1.Routes) != 2 {
		b, _ := json.Marshal(res1)
		t.Fatalf("result shape: %s", b)
	}

	// The IPv6 gateway is ready when ADD returns: the host side holds the EUI-64 link-local address
	// of EE:EE:EE:EE:EE:EE (past duplicate address detection) and the container routes through it.
	if out := r.ip("-n", r.hostNS, "-6", "-o", "addr", "show", "dev", "calictr-one-012"); !strings.Contains(out, "fe80::ecee:eeff:feee:eeee/64") ||
		strings.Contains(out, "tentative") {
		t.Errorf("host side's link-local address: %q", out)
	}
	if out := r.ip("-n", c1, "-6", "route", "show", "default"); !strings.Contains(out, "via fe80::ecee:eeff:feee:eeee dev eth0") {
		t.Errorf("container's IPv6 default route: %q", out)
	}

	// The test route: the host answers ARP for 169.254.1.1 only when it has a route to it
	// elsewhere (on a real host: the default route), and IPv6 needs global forwarding.
	r.ip("-n", r.hostNS, "link", "add", "uplink0", "type", "veth", "peer", "name", "uplink1")
	r.ip("-n", r.hostNS, "link", "set", "uplink0", "up")
	r.ip("-n", r.hostNS, "link", "set", "uplink1", "up")
	r.ip("-n", r.hostNS, "route", "add", "169.254.1.1/32", "dev", "uplink0")
	if out, err := exec.Command("ip", "netns", "exec", r.hostNS, "sysctl", "-w", "net.ipv6.conf.all.forwarding=1").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	for _, target := range []netip.Addr{a2[0].Addr(), a2[1].Addr()} {
		out, err := exec.Command("ip", "netns", "exec", c1, "ping", "-c", "1", "-W", "3", target.String()).CombinedOutput()
		if err != nil {
			t.Errorf("ping %s from container 1: %v\n%s", target, err, out)
		}
	}

	// A repeated ADD returns the same result.
	again, err := r.add("1.0.0", rc1)
	if err != nil {
		t.Fatalf("repeated ADD: %v", err)
	}
	j1, _ := json.Marshal(res1)
	j2, _ := json.Marshal(again)
	if string(j1) != string(j2) {
		t.Errorf("repeated ADD differs:\n%s\n%s", j1, j2)
	}
	if err := r.check("1.0.0", rc1); err != nil {
		t.Errorf("CHECK: %v", err)
	}

	// The endpoint is Project Calico's.
	wep, err := datastore.GetAs[*api.WorkloadEndpoint](context.Background(), r.ds, "default", "host--a-cni-ctr--one--0123456789-eth0")
	if err != nil {
		t.Fatal(err)
	}
	if wep.Spec.InterfaceName != "calictr-one-012" || wep.Spec.MAC != res1.Interfaces[1].Mac || len(wep.Spec.IPNetworks) != 2 ||
		wep.Spec.Orchestrator != "cni" || wep.Labels["projectcalico.org/orchestrator"] != "cni" || !slices.Equal(wep.Spec.Profiles, []string{"calico-net"}) {
		t.Errorf("endpoint %+v", wep)
	}
	if _, err := datastore.GetAs[*api.Profile](context.Background(), r.ds, "", "calico-net"); err != nil {
		t.Errorf("profile: %v", err)
	}

	// CHECK notices a missing host route.
	r.ip("-n", r.hostNS, "route", "del", a1[0].String())
	if err := r.check("1.0.0", rc1); err == nil || !strings.Contains(err.Error(), "host route") {
		t.Errorf("CHECK with a missing host route: %v", err)
	}

	for _, rc := range []struct {
		id, ns string
	}{{rc1.ContainerID, rc1.NetNS}, {rc2.ContainerID, rc2.NetNS}} {
		if err := r.del("1.0.0", rt(rc.id, rc.ns)); err != nil {
			t.Fatalf("DEL %s: %v", rc.id, err)
		}
		if out := r.ip("-n", strings.TrimPrefix(rc.ns, "/var/run/netns/"), "-o", "link"); strings.Contains(out, "eth0") {
			t.Errorf("container interface still there: %s", out)
		}
	}
	r.assertClean()
	// DEL again (and of a container never added) succeeds.
	if err := r.del("1.0.0", rc1); err != nil {
		t.Errorf("second DEL: %v", err)
	}
	if err := r.del("1.0.0", rt("never-added", "")); err != nil {
		t.Errorf("DEL of an unknown container: %v", err)
	}
}

// TestCNIVersions: the result is printed in the version the runtime asks for.
func TestCNIVersions(t *testing.T) {
	r := newRig(t)
	r.conf["ipam"] = map[string]any{"type": "calico-ipam"} // IPv4 only
	for i, v := range []string{"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"} {
		ns := r.netns("v")
		rc := rt("ver"+string(rune('a'+i)), "/var/run/netns/"+ns)
		raw, err := r.addRaw(v, rc)
		if err != nil {
			t.Fatalf("%s ADD: %v", v, err)
		}
		if raw.Version() != v {
			t.Errorf("asked for %s, the plugin printed %s", v, raw.Version())
		}
		res, err := types100.NewResultFromResult(raw)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.IPs) != 1 || !netip.MustParsePrefix("10.65.0.0/16").Contains(netip.AddrFrom4([4]byte(res.IPs[0].Address.IP.To4()))) {
			t.Errorf("%s: IPs %v", v, res.IPs)
		}
		if v == "0.4.0" || v == "1.0.0" || v == "1.1.0" {
			if err := r.check(v, rc); err != nil {
				t.Errorf("%s CHECK: %v", v, err)
			}
		}
		if err := r.del(v, rc); err != nil {
			t.Fatalf("%s DEL: %v", v, err)
		}
	}
	r.assertClean()
}

// TestK8sMode: pod name and namespace from CNI_ARGS only.
func TestK8sMode(t *testing.T) {
	r := newRig(t)
	ns := r.netns("k")
	rc := rt("k8s-container-id", "/var/run/netns/"+ns, [2]string{"K8S_POD_NAMESPACE", "team-a"}, [2]string{"K8S_POD_NAME", "web-0"})
	res, err := r.add("1.0.0", rc)
	if err != nil {
		t.Fatal(err)
	}
	wep, err := datastore.GetAs[*api.WorkloadEndpoint](context.Background(), r.ds, "team-a", "host--a-k8s-web--0-eth0")
	if err != nil {
		t.Fatal(err)
	}
	if wep.Spec.Orchestrator != "k8s" || wep.Spec.Pod != "web-0" || wep.Spec.InterfaceName != res.Interfaces[0].Name ||
		!strings.HasPrefix(wep.Spec.InterfaceName, "cali") || wep.Spec.InterfaceName == "calik8s-contai" {
		t.Errorf("k8s endpoint %+v", wep.Spec)
	}
	addr, _ := netip.AddrFromSlice(res.IPs[0].Address.IP.To4())
	kvs := r.keys(datastore.HandlePrefix)
	if len(kvs) != 1 || kvs[0] != datastore.HandleKey("calico-net.k8s-container-id") {
		t.Errorf("handles %v", kvs)
	}
	_ = addr
	p, err := datastore.GetAs[*api.Profile](context.Background(), r.ds, "", "calico-net")
	if err != nil || len(p.Spec.Ingress) != 1 || p.Spec.Ingress[0].Source.Selector != "" {
		t.Errorf("k8s profile must allow all ingress: %+v %v", p, err)
	}
	if err := r.del("1.0.0", rc); err != nil {
		t.Fatal(err)
	}
	r.assertClean()
}
