package calicoctl

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/ipam"
)

const nodeTestPools = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: v4}
spec: {cidr: 10.65.0.0/16, vxlanMode: Always}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: v6}
spec: {cidr: "fd5c:1:2::/48", vxlanMode: Always}
`

func (h *harness) ipam() *ipam.Client {
	return ipam.New(datastore.NewFromEtcd(h.cli), zerolog.Nop())
}

// assign allocates addresses for a host from IPAM and returns them as /32 and /128 networks.
func (h *harness) assign(host, handle string, n4, n6 int, use string) []string {
	h.t.Helper()
	v4, v6, err := h.ipam().AutoAssign(h.t.Context(), ipam.AutoAssignArgs{Num4: n4, Num6: n6, HandleID: handle,
		Hostname: host, IntendedUse: use, Attrs: map[string]string{"node": host}})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, p := range append(v4, v6...) {
		out = append(out, p.String())
	}
	return out
}

func nodeYAML(name, spec string) string {
	return fmt.Sprintf("apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: %s}\nspec: {%s}\n---\n", name, spec)
}

func wepYAML(node, namespace, workload string, nets []string) string {
	name := api.WorkloadEndpointName(node, "cni", workload, "eth0")
	return fmt.Sprintf(`apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: %s, namespace: %s}
spec: {orchestrator: cni, node: %s, containerID: %s, endpoint: eth0, interfaceName: cali%s, ipNetworks: [%s]}
---
`, name, namespace, node, workload, workload, strings.Join(quoteAll(nets), ", "))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

func namedYAML(kind, name, spec string) string {
	return fmt.Sprintf("apiVersion: projectcalico.org/v3\nkind: %s\nmetadata: {name: %s}\nspec: {%s}\n---\n", kind, name, spec)
}

// TestDeleteNodeCleansUp: host-a has two dual-stack workloads (in two namespaces), IPv4 and
// IPv6 VXLAN tunnel addresses, a BGPPeer, per-node FelixConfiguration and BGPConfiguration and a
// HostEndpoint; host-b borrowed an address from host-a's IPv4 block. Deleting host-a puts the
// datastore back to what it was before host-a was added (but for host-b's borrowed address and
// the block holding it, now without affinity), leaves no key or value naming host-a, and leaves
// IPAM consistent. host-a-x, whose workload names start with host-a's, is left alone.
func TestDeleteNodeCleansUp(t *testing.T) {
	h := newHarness(t)
	h.ok(nodeTestPools, "apply", "-f", "-")
	h.ok(nodeYAML("host-b", "")+nodeYAML("host-a-x", "")+
		wepYAML("host-b", "default", "b1", h.assign("host-b", "net.b1", 1, 1, ""))+
		wepYAML("host-a-x", "default", "x1", h.assign("host-a-x", "net.x1", 1, 0, ""))+
		namedYAML("BGPPeer", "global", "peerIP: 198.18.9.9, asNumber: 64999")+
		namedYAML("BGPPeer", "b-peer", "node: host-b, peerIP: 198.18.9.8, asNumber: 64998")+
		namedYAML("FelixConfiguration", "node.host-b", "logSeverityScreen: Debug")+
		namedYAML("HostEndpoint", "x-eth0", "node: host-a-x, interfaceName: eth0"),
		"apply", "-f", "-")
	before := h.dump()

	tun4 := h.assign("host-a", "vxlan-tunnel-addr-host-a", 1, 0, api.UseTunnel)
	tun6 := h.assign("host-a", "vxlan-v6-tunnel-addr-host-a", 0, 1, api.UseTunnel)
	borrowed := h.borrowNext(tun4[0], "host-b", "net.b2")
	h.ok(nodeYAML("host-a", fmt.Sprintf("ipv4VXLANTunnelAddr: %s, ipv6VXLANTunnelAddr: %q",
		strings.TrimSuffix(tun4[0], "/32"), strings.TrimSuffix(tun6[0], "/128")))+
		wepYAML("host-a", "default", "a1", h.assign("host-a", "net.a1", 1, 1, ""))+
		wepYAML("host-a", "other", "a2", h.assign("host-a", "net.a2", 1, 1, ""))+
		wepYAML("host-b", "default", "b2", []string{borrowed})+
		namedYAML("BGPPeer", "a-peer", "node: host-a, peerIP: 198.18.9.7, asNumber: 64997")+
		namedYAML("FelixConfiguration", "node.host-a", "logSeverityScreen: Debug")+
		namedYAML("BGPConfiguration", "node.host-a", "listenPort: 1790")+
		namedYAML("HostEndpoint", "a-eth0", "node: host-a, interfaceName: eth0"),
		"apply", "-f", "-")
	v4Block, _ := netip.MustParsePrefix(borrowed).Addr().Prefix(26)

	r := h.ok("", "delete", "node", "host-a")
	want := "Cleaned up Node(host-a): released 6 IP addresses, deleted 2 WorkloadEndpoints, deleted 1 empty IPAM block, " +
		"kept 1 IPAM block in use without affinity, released 2 IPAM block affinities, deleted 1 BGPPeer, " +
		"deleted FelixConfiguration(node.host-a), deleted BGPConfiguration(node.host-a), deleted 1 HostEndpoint\n" +
		"Successfully deleted 1 'Node' resource(s)\n"
	if r.stdout != want || r.stderr != "" {
		t.Errorf("stdout:\n%s\nwant:\n%s\nstderr: %q", r.stdout, want, r.stderr)
	}
	after := h.dump()
	added := []string{datastore.BlockKey(v4Block.String()), datastore.HandleKey("net.b2"),
		"/calico/resources/v3/projectcalico.org/workloadendpoints/default/" + api.WorkloadEndpointName("host-b", "cni", "b2", "eth0")}
	assertRestored(t, before, after, added)
	if aff := after[added[0]].(map[string]any)["affinity"]; aff != nil {
		t.Errorf("host-a's block in use kept affinity %v", aff)
	}
	if out := h.ok("", "ipam", "check").stdout; !strings.HasSuffix(out, "Check complete; found 0 problems.\n") {
		t.Errorf("ipam check:\n%s", out)
	}

	r = h.fail("", "delete", "node", "host-a")
	if want := "Failed to delete 'Node' resource: resource does not exist: Node(host-a) with error: <nil>\n\n"; r.stderr != want || r.stdout != "" {
		t.Errorf("second delete: stdout %q, stderr %q (want %q)", r.stdout, r.stderr, want)
	}
	if r := h.ok("", "delete", "node", "host-a", "--skip-not-exists"); r.stdout != "Successfully deleted 1 'Node' resource(s)\n" {
		t.Errorf("second delete with --skip-not-exists: %q", r.stdout)
	}
}

// borrowNext assigns, for host, the address after addr (a /32) in addr's block.
func (h *harness) borrowNext(addr, host, handle string) string {
	h.t.Helper()
	ip := netip.MustParsePrefix(addr).Addr().Next()
	if err := h.ipam().AssignIP(h.t.Context(), ipam.AssignIPArgs{IP: ip, HandleID: handle, Hostname: host,
		Attrs: map[string]string{"node": host}}); err != nil {
		h.t.Fatal(err)
	}
	return netip.PrefixFrom(ip, 32).String()
}

// assertRestored checks that after holds every key of before with the same value, the added
// keys, and nothing else; and that no key or value names host-a.
func assertRestored(t *testing.T, before, after map[string]any, added []string) {
	t.Helper()
	for key, b := range before {
		if d := diffJSON(b, after[key]); d != "" {
			t.Errorf("%s changed:\n%s", key, d)
		}
	}
	var extra []string
	for key := range after {
		if _, ok := before[key]; !ok {
			extra = append(extra, key)
		}
	}
	sort.Strings(extra)
	sort.Strings(added)
	if strings.Join(extra, "\n") != strings.Join(added, "\n") {
		t.Errorf("keys added by host-a's life and death:\n%s\nwant:\n%s", strings.Join(extra, "\n"), strings.Join(added, "\n"))
	}
	for key, v := range after {
		raw, _ := json.Marshal(v)
		if strings.Contains(key, "host-a/") || strings.HasSuffix(key, "host-a") || strings.Contains(key, "host--a-cni") ||
			strings.Contains(string(raw), `"host-a"`) || strings.Contains(string(raw), `host:host-a"`) {
			t.Errorf("%s still names host-a: %s", key, raw)
		}
	}
}

// TestDeleteNodeFromFile: `delete -f` of a Node cleans up too. A stale resourceVersion is
// refused before anything is touched; the current one deletes the Node and its belongings.
func TestDeleteNodeFromFile(t *testing.T) {
	h := newHarness(t)
	h.ok(nodeTestPools, "apply", "-f", "-")
	nets := h.assign("host-c", "net.c1", 1, 0, "")
	h.ok(nodeYAML("host-c", "")+wepYAML("host-c", "default", "c1", nets)+namedYAML("BGPConfiguration", "node.host-c", "listenPort: 1790"), "apply", "-f", "-")
	stale := h.ok("", "get", "node", "host-c", "-o", "yaml").stdout
	h.ok("", "label", "node", "host-c", "zone=z1")
	before := h.dump()

	r := h.fail(stale, "delete", "-f", "-")
	if want := "Failed to delete 'Node' resource: update conflict: Node(host-c)\n\n"; r.stderr != want || r.stdout != "" {
		t.Errorf("stale delete: stdout %q, stderr %q (want %q)", r.stdout, r.stderr, want)
	}
	if d := diffJSON(before, h.dump()); d != "" {
		t.Errorf("a refused delete changed the datastore:\n%s", d)
	}

	current := h.ok("", "get", "node", "host-c", "-o", "yaml").stdout
	r = h.ok(current, "delete", "-f", "-")
	want := "Cleaned up Node(host-c): released 1 IP address, deleted 1 WorkloadEndpoint, deleted 1 empty IPAM block, " +
		"released 1 IPAM block affinity, deleted BGPConfiguration(node.host-c)\nSuccessfully deleted 1 'Node' resource(s)\n"
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	for key := range h.dump() {
		if strings.Contains(key, "host-c") || strings.Contains(key, "net.c1") {
			t.Errorf("%s is left", key)
		}
	}
	if out := h.ok("", "ipam", "check").stdout; !strings.HasSuffix(out, "Check complete; found 0 problems.\n") {
		t.Errorf("ipam check:\n%s", out)
	}
}

// TestDeleteMissingNodeCleansLeftovers: the Node is gone but a workload, its address and a block
// claim of the node are left (a half-finished earlier removal): deleting the Node cleans them up
// and reports that the Node does not exist (an error unless --skip-not-exists).
func TestDeleteMissingNodeCleansLeftovers(t *testing.T) {
	h := newHarness(t)
	h.ok(nodeTestPools, "apply", "-f", "-")
	h.ok(wepYAML("ghost", "default", "g1", h.assign("ghost", "net.g1", 2, 0, "")), "apply", "-f", "-")
	r := h.fail("", "delete", "node", "ghost")
	want := "Cleaned up Node(ghost): released 2 IP addresses, deleted 1 WorkloadEndpoint, deleted 1 empty IPAM block, released 1 IPAM block affinity\n"
	if r.stdout != want || r.stderr != "Failed to delete 'Node' resource: resource does not exist: Node(ghost) with error: <nil>\n\n" {
		t.Errorf("stdout %q (want %q), stderr %q", r.stdout, want, r.stderr)
	}
	for key := range h.dump() {
		if strings.HasPrefix(key, datastore.IPAMPrefix) || strings.Contains(key, "ghost") {
			t.Errorf("%s is left", key)
		}
	}
	r = h.ok("", "delete", "node", "ghost", "-s")
	if r.stdout != "Successfully deleted 1 'Node' resource(s)\n" {
		t.Errorf("nothing left to clean: stdout %q", r.stdout)
	}
}
