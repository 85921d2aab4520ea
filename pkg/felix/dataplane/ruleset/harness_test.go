package ruleset

import (
	"context"
	"maps"
	"net/netip"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/apply"
	"github.com/calico-host/calico-host/pkg/nft/fake"
)

// harness is a Builder with a model of its own (the maps of an Input, as the dataplane's model
// holds them) whose builds are applied to the nft fake, which refuses what the kernel refuses.
type harness struct {
	t        testing.TB
	b        *Builder
	in       *Input
	vteps    map[string]*calc.VTEP
	fake     *fake.Backend
	applier  *apply.Applier
	withheld map[string]bool
}

// testConfig is the renderers' configuration with Project Calico's defaults.
func testConfig(ipv6 bool) *rules.Config {
	marks, err := rules.MarksFromMask(0xffff0000)
	if err != nil {
		panic(err)
	}
	return &rules.Config{
		IPv6: ipv6, WorkloadPrefixes: []string{"cali"}, Marks: marks, EndpointToHost: rules.ActionDrop,
		FailsafeIn:  []rules.ProtoPort{{Protocol: nft.ProtoTCP, Port: 22}},
		FailsafeOut: []rules.ProtoPort{{Protocol: nft.ProtoUDP, Port: 53}},
		DropInvalid: true, VXLANPort: 4789, LogPrefix: "calico-packet",
		MetadataAddr: netip.MustParseAddr("127.0.0.1"), MetadataPort: 8775,
	}
}

func newHarness(t testing.TB, ipv6 bool) *harness {
	return newHarnessWith(t, testConfig(ipv6))
}

func newHarnessWith(t testing.TB, cfg *rules.Config) *harness {
	h := &harness{t: t, vteps: map[string]*calc.VTEP{}, fake: fake.New(), withheld: map[string]bool{}}
	h.in = &Input{
		Policies: map[calc.PolicyID]*calc.Policy{}, Profiles: map[string]*calc.Profile{},
		Endpoints: map[calc.WorkloadEndpointID]*calc.WorkloadEndpoint{}, IPSets: map[string]*IPSet{},
		Pools: map[string]*calc.IPPool{}, Hosts: map[string]*calc.HostMetadata{}, VTEPs: maps.Values(h.vteps),
		Changed: Changes{Endpoints: map[calc.WorkloadEndpointID]bool{}, Policies: map[calc.PolicyID]bool{}, Volatile: true},
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
	h.b = New(cfg, "calico", log, func(key string) bool { return h.withheld[key] })
	tables := []nft.TableID{{Family: nft.FamilyIP, Name: "calico"}, {Family: nft.FamilyIP6, Name: "calico"}}
	h.applier = apply.New(h.fake, apply.Options{Tables: tables, Log: log})
	return h
}

// policy puts (nil rules and selector "": removes) a policy.
func (h *harness) policy(id calc.PolicyID, sel string, in, out []calc.Rule) {
	h.in.Policies[id] = &calc.Policy{Selector: sel, InboundRules: in, OutboundRules: out}
	h.in.Changed.Policies[id], h.in.Changed.Rules = true, true
}

func (h *harness) removePolicy(id calc.PolicyID) {
	delete(h.in.Policies, id)
	h.in.Changed.Policies[id], h.in.Changed.Rules = true, true
}

func (h *harness) profile(name string, in, out []calc.Rule) {
	h.in.Profiles[name] = &calc.Profile{InboundRules: in, OutboundRules: out}
	h.in.Changed.Rules = true
}

// endpoint puts (nil: removes) workload endpoint name.
func (h *harness) endpoint(name string, ep *calc.WorkloadEndpoint) {
	id := wepID(name)
	if ep == nil {
		delete(h.in.Endpoints, id)
	} else {
		h.in.Endpoints[id] = ep
	}
	h.in.Changed.Endpoints[id] = true
	h.in.Changed.Volatile = true // spoofing exceptions and floating IPs
}

func (h *harness) ipset(id string, members ...string) {
	var ms []calc.IPSetMember
	for _, m := range members {
		ms = append(ms, calc.IPSetMember{Prefix: netip.MustParsePrefix(m)})
	}
	h.in.IPSets[id] = NewIPSet(calc.IPSetNet, ms)
}

// build builds and applies the tables; it fails the test when the fake refuses them.
func (h *harness) build() {
	h.t.Helper()
	tables := h.b.Build(h.in)
	clear(h.in.Changed.Endpoints)
	clear(h.in.Changed.Policies)
	h.in.Changed.Rules, h.in.Changed.Volatile = false, false
	if _, err := h.applier.Apply(context.Background(), tables...); err != nil {
		h.t.Fatalf("apply: %v", err)
	}
}

// chainRules is a chain of the ip table as nft lists it, one rule a line ("" when absent).
func (h *harness) chainRules(name string) string {
	t := h.b.Tables()[0]
	c := t.Chain(name)
	if c == nil {
		return ""
	}
	var lines []string
	for _, r := range c.Rules {
		lines = append(lines, r.Text(t.Family))
	}
	return strings.Join(lines, "\n")
}

// workloadChain is the chain the ip table's dispatch map sends traffic to (egress false) or
// from (egress true) a workload interface to.
func (h *harness) workloadChain(iface string, egress bool) string {
	from, to := rules.DispatchMaps()
	m := h.b.Tables()[0].Map(to)
	if egress {
		m = h.b.Tables()[0].Map(from)
	}
	return m.Elements[nft.IfnameKey(iface)].Chain
}

// flushed lists the chains the last batch flushed.
func (h *harness) flushed() []string {
	var out []string
	for _, op := range h.fake.LastBatch().Ops {
		if op.Kind == nft.OpFlushChain {
			out = append(out, op.Table.String()+" "+op.Name)
		}
	}
	return out
}

func gnpID(name string) calc.PolicyID { return calc.PolicyID{Tier: "default", Kind: "gnp", Name: name} }

func wepID(name string) calc.WorkloadEndpointID {
	return calc.WorkloadEndpointID{OrchestratorID: "k8s", WorkloadID: "ns/" + name, EndpointID: "eth0"}
}

// workload is a local endpoint on iface with the given tiers (and profiles).
func workload(iface string, tiers []calc.TierInfo, profiles ...string) *calc.WorkloadEndpoint {
	return &calc.WorkloadEndpoint{Name: iface, Tiers: tiers, ProfileIDs: profiles}
}

// ingress is a tier whose policies apply to ingress.
func ingress(name string, ids ...calc.PolicyID) calc.TierInfo {
	return calc.TierInfo{Name: name, DefaultAction: "Deny", IngressPolicies: ids}
}

func ports(p ...uint16) []calc.PortRange {
	var out []calc.PortRange
	for _, x := range p {
		out = append(out, calc.PortRange{First: x, Last: x})
	}
	return out
}
