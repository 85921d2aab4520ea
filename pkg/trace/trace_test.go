package trace

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// object is one datastore object of a test: its kind (plural), namespace, name and spec.
type object struct {
	plural, ns, name string
	spec             string
	labels           map[string]string
}

// decode turns objects into a syncer snapshot, decoded as the syncer decodes them.
func decode(t testing.TB, objs ...object) []syncer.Update {
	t.Helper()
	var out []syncer.Update
	for i, o := range objs {
		k, ok := api.KindByPlural(o.plural)
		if !ok {
			t.Fatalf("no kind %q", o.plural)
		}
		key := datastore.ResourceKey(k, o.ns, o.name)
		meta := map[string]any{"name": o.name, "namespace": o.ns, "labels": o.labels}
		raw, _ := json.Marshal(map[string]any{"kind": k.Kind, "apiVersion": "projectcalico.org/v3",
			"metadata": meta, "spec": json.RawMessage(o.spec)})
		v, err := datastore.Decode(key, raw, int64(i+1))
		if err != nil {
			t.Fatalf("decoding %s: %v", key, err)
		}
		if r, ok := v.(api.Resource); ok {
			api.SetDefaults(r)
		}
		out = append(out, syncer.Update{ID: datastore.IDOf(key), Value: v, Revision: int64(i + 1)})
	}
	return out
}

func node(name, addr string) object {
	return object{plural: "nodes", name: name, spec: fmt.Sprintf(`{"bgp":{"ipv4Address":%q}}`, addr)}
}

func workload(host, name, iface, addr string, labels map[string]string) object {
	return object{plural: "workloadendpoints", ns: "prod", name: host + "-k8s-" + name + "-eth0", labels: labels,
		spec: fmt.Sprintf(`{"orchestrator":"k8s","workload":%q,"node":%q,"endpoint":"eth0","interfaceName":%q,"ipNetworks":[%q]}`,
			name, host, iface, addr)}
}

func gnp(plural, name, spec string) object { return object{plural: plural, name: name, spec: spec} }

// twoWorkloads: a and b on host h1, c on host h2; every endpoint may send; b takes TCP 80.
func twoWorkloads(t testing.TB, extra ...object) []syncer.Update {
	objs := []object{
		node("h1", "198.18.0.1/24"), node("h2", "198.18.0.2/24"),
		workload("h1", "a", "cali0a", "10.65.0.1/32", map[string]string{"app": "a"}),
		workload("h1", "b", "cali0b", "10.65.0.2/32", map[string]string{"app": "b"}),
		workload("h2", "c", "cali0c", "10.65.1.1/32", map[string]string{"app": "c"}),
		gnp("globalnetworkpolicies", "allow-out", `{"selector":"all()","types":["Egress"],"egress":[{"action":"Allow"}]}`),
		gnp("globalnetworkpolicies", "web", `{"selector":"app == 'b'","types":["Ingress"],
			"ingress":[{"action":"Allow","protocol":"TCP","destination":{"ports":[80]}}]}`),
	}
	return decode(t, append(objs, extra...)...)
}

func run(t *testing.T, ups []syncer.Update, src, dst string, proto uint8, port uint16) *Trace {
	t.Helper()
	tr, err := Run(ups, Request{Src: src, Dst: dst, Proto: proto, Port: port}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// last returns the last rule of the direction's path at the hop on host.
func last(t *testing.T, v Verdict, host string, d ruleid.Direction) ruleid.RuleID {
	t.Helper()
	for _, h := range v.Hops {
		p := h.Ingress
		if d == ruleid.Egress {
			p = h.Egress
		}
		if h.Host == host && len(p) > 0 {
			return p[len(p)-1]
		}
	}
	t.Fatalf("%v: no %v path on %s: %+v", v.Scope, d, host, v.Hops)
	return ruleid.RuleID{}
}

func TestAllowedAndDenied(t *testing.T) {
	ups := twoWorkloads(t)
	tr := run(t, ups, "a", "b", flowlog.ProtoTCP, 80)
	if !tr.Enforced.Allowed || !tr.Pending.Allowed {
		t.Fatalf("a -> b tcp/80: %+v", tr.Enforced)
	}
	out := last(t, tr.Enforced, "h1", ruleid.Egress)
	in := last(t, tr.Enforced, "h1", ruleid.Ingress)
	if out.Name != "allow-out" || out.Action != flowlog.Allow || in.Name != "web" || in.Index != 0 || in.Tier != "default" {
		t.Errorf("a -> b tcp/80: egress %v, ingress %v", out, in)
	}
	tr = run(t, ups, "prod/h1-k8s-a-eth0", "10.65.0.2", flowlog.ProtoTCP, 81)
	if tr.Enforced.Allowed {
		t.Fatal("a -> b tcp/81 allowed")
	}
	if in := last(t, tr.Enforced, "h1", ruleid.Ingress); in.Kind != flowlog.KindEndOfTier || in.Tier != "default" {
		t.Errorf("a -> b tcp/81 decided by %v, want the end of tier default", in)
	}
	h := tr.Enforced.Hops[0].IngressHits
	if len(h) != 1 || h[0].Trigger == nil || h[0].Trigger.Name != "web" {
		t.Errorf("end of tier hits %+v, want triggered by web", h)
	}
}

// Across hosts: the egress is decided on the source's host, the ingress on the destination's.
func TestTwoHosts(t *testing.T) {
	ups := twoWorkloads(t, gnp("globalnetworkpolicies", "c-in", `{"selector":"app == 'c'","types":["Ingress"],
		"ingress":[{"action":"Deny","protocol":"UDP"},{"action":"Allow"}]}`))
	tr := run(t, ups, "a", "c", flowlog.ProtoUDP, 53)
	if tr.Enforced.Allowed || len(tr.Enforced.Hops) != 2 {
		t.Fatalf("a -> c udp/53: %+v", tr.Enforced)
	}
	if out := last(t, tr.Enforced, "h1", ruleid.Egress); out.Name != "allow-out" {
		t.Errorf("egress on h1: %v", out)
	}
	if in := last(t, tr.Enforced, "h2", ruleid.Ingress); in.Name != "c-in" || in.Index != 0 || in.Action != flowlog.Deny {
		t.Errorf("ingress on h2: %v", in)
	}
	if tr = run(t, ups, "a", "c", flowlog.ProtoTCP, 22); !tr.Enforced.Allowed {
		t.Errorf("a -> c tcp/22 denied: %+v", tr.Enforced)
	}
}

func TestNoProfileMatched(t *testing.T) {
	ups := decode(t, node("h1", "198.18.0.1/24"),
		workload("h1", "a", "cali0a", "10.65.0.1/32", nil), workload("h1", "b", "cali0b", "10.65.0.2/32", nil))
	tr := run(t, ups, "a", "b", flowlog.ProtoICMP, 0)
	if tr.Enforced.Allowed {
		t.Fatal("allowed without policy or profile")
	}
	if out := last(t, tr.Enforced, "h1", ruleid.Egress); out.Name != ruleid.NoMatchProfile {
		t.Errorf("decided by %v, want no profile matched", out)
	}
}

func TestPrint(t *testing.T) {
	ups := twoWorkloads(t, gnp("stagedglobalnetworkpolicies", "lockdown", `{"order":1,"selector":"app == 'b'",
		"types":["Ingress"],"ingress":[{"action":"Deny","protocol":"TCP"}]}`))
	var b strings.Builder
	Print(&b, run(t, ups, "a", "b", flowlog.ProtoTCP, 80), false)
	for _, want := range []string{
		"Connection: tcp 10.65.0.1 -> 10.65.0.2 port 80",
		"Enforced: ALLOWED",
		"egress of a: tier default -> GlobalNetworkPolicy allow-out -> rule 0 -> allow",
		"ingress of b: tier default -> GlobalNetworkPolicy web -> rule 0 -> allow",
		"packet: forwarded via cali0b",
		"Pending (staged policies enforced): DENIED",
		"ingress of b: tier default -> StagedGlobalNetworkPolicy lockdown -> rule 0 -> deny",
		"packet: dropped by filter-cali-",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}

// A workload whose interface felix does not police (InterfacePrefix) is said so.
func TestUnpolicedInterface(t *testing.T) {
	ups := twoWorkloads(t, object{plural: "felixconfigurations", name: "default", spec: `{"interfacePrefix":"tap"}`})
	tr := run(t, ups, "a", "b", flowlog.ProtoTCP, 81)
	if w := tr.Enforced.Hops[0].Warnings; len(w) != 2 || !strings.Contains(w[0], "cali0a is not one") {
		t.Errorf("warnings %q", w)
	}
	if !tr.Enforced.Allowed {
		t.Error("denied: felix does not police these interfaces")
	}
}

// A host endpoint's policy decides the host's own traffic: egress when the host sends (to
// the host endpoint's chain), ingress when it receives.
func TestHostEndpoint(t *testing.T) {
	ups := twoWorkloads(t,
		object{plural: "hostendpoints", name: "h1-eth0", labels: map[string]string{"hep": "uplink"},
			spec: `{"node":"h1","interfaceName":"eth0","expectedIPs":["198.18.0.1"]}`},
		gnp("globalnetworkpolicies", "hep", `{"order":1,"selector":"has(hep)","egress":[{"action":"Deny","protocol":"TCP","destination":{"ports":[8080]}},{"action":"Allow"}],
			"ingress":[{"action":"Allow","protocol":"TCP","destination":{"ports":[8443]}}]}`))
	tr := run(t, ups, "h1", "c", flowlog.ProtoTCP, 8080)
	if tr.Enforced.Allowed {
		t.Fatalf("h1 -> c tcp/8080 allowed: %+v", tr.Enforced.Hops)
	}
	if out := last(t, tr.Enforced, "h1", ruleid.Egress); out.Name != "hep" || out.Index != 0 || out.Action != flowlog.Deny {
		t.Errorf("h1 -> c tcp/8080 decided by %v", out)
	}
	tr = run(t, ups, "c", "h1-eth0", flowlog.ProtoTCP, 8443)
	if in := last(t, tr.Enforced, "h1", ruleid.Ingress); in.Name != "hep" || in.Action != flowlog.Allow {
		t.Errorf("c -> h1 tcp/8443 decided by %v", in)
	}
	if !tr.Enforced.Allowed {
		t.Errorf("c -> h1 tcp/8443 denied: %+v", tr.Enforced.Hops)
	}
}

// An IPv6 address on either end makes a name resolve to its endpoint's IPv6 address.
func TestIPv6ByName(t *testing.T) {
	ups := decode(t, node("h1", "198.18.0.1/24"),
		workload("h1", "a", "cali0a", "10.65.0.1/32", map[string]string{"app": "a"}),
		object{plural: "workloadendpoints", ns: "prod", name: "h1-k8s-b-eth0", labels: map[string]string{"app": "b"},
			spec: `{"orchestrator":"k8s","workload":"b","node":"h1","endpoint":"eth0","interfaceName":"cali0b","ipNetworks":["10.65.0.2/32","fd5c::2/128"]}`},
		gnp("globalnetworkpolicies", "all", `{"selector":"all()","ingress":[{"action":"Allow","ipVersion":6}],"egress":[{"action":"Allow"}]}`))
	tr := run(t, ups, "fd5c::9", "b", flowlog.ProtoTCP, 80)
	if tr.Dst.Addr.String() != "fd5c::2" || !tr.Enforced.Allowed {
		t.Errorf("fd5c::9 -> b: to %s, allowed %v", tr.Dst.Addr, tr.Enforced.Allowed)
	}
	if tr = run(t, ups, "a", "b", flowlog.ProtoTCP, 80); tr.Dst.Addr.String() != "10.65.0.2" || tr.Enforced.Allowed {
		t.Errorf("a -> b: to %s, allowed %v (ingress allows IPv6 only)", tr.Dst.Addr, tr.Enforced.Allowed)
	}
}
