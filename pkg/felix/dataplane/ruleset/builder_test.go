package ruleset

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// TestBuildConverges: after every step of random changes to the model (policies, their
// selectors and tiers, profiles, endpoints and the interfaces they claim, IP sets and their
// members, sets calc never sent, spoofing exceptions, pools), the tables the builder updated in
// place equal those a new builder makes from the same model, and the fake takes them.
func TestBuildConverges(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			h := newHarness(t, seed%2 == 0)
			for step := range 30 {
				for range 1 + rng.IntN(4) {
					randomChange(rng, h)
				}
				h.build()
				fresh := New(testConfig(seed%2 == 0), "calico", h.b.static.log, func(key string) bool { return h.withheld[key] })
				want := nft.Dump(fresh.Build(everything(h.in))...)
				if diff := cmp.Diff(want, nft.Dump(h.b.Tables()...)); diff != "" {
					t.Fatalf("step %d: the tables built in place differ from a fresh build (-fresh +in place):\n%s", step, diff)
				}
			}
		})
	}
}

// everything is in with every endpoint and policy changed: what a new builder needs.
func everything(in *Input) *Input {
	out := *in
	out.Changed = Changes{Endpoints: map[calc.WorkloadEndpointID]bool{}, Policies: map[calc.PolicyID]bool{},
		Rules: true, Volatile: true}
	for id := range in.Endpoints {
		out.Changed.Endpoints[id] = true
	}
	for id := range in.Policies {
		out.Changed.Policies[id] = true
	}
	return &out
}

// randomChange makes one random change to the harness's model, keeping it what calc could
// send: a policy name is in one tier at a time (moving it to another tier, or removing it,
// updates the endpoints that have it), endpoints have the policies the model has.
func randomChange(rng *rand.Rand, h *harness) {
	sets := []string{"s:a", "s:b", "s:c", "s:never"}
	name := fmt.Sprint("p", rng.IntN(6))
	switch rng.IntN(8) {
	case 0, 1:
		id := calc.PolicyID{Tier: []string{"default", "t1"}[rng.IntN(2)], Kind: "gnp", Name: name}
		if old, ok := policyNamed(h, name); ok && rng.IntN(3) > 0 {
			id = old // the same tier, mostly
		}
		h.setPolicy(name, &id, []string{"a", "b"}[rng.IntN(2)], randomRules(rng, sets), randomRules(rng, sets))
	case 2:
		h.setPolicy(name, nil, "", nil, nil)
	case 3:
		h.profile(fmt.Sprint("prof", rng.IntN(2)), randomRules(rng, sets), randomRules(rng, sets))
	case 4, 5:
		h.endpoint(fmt.Sprint("w", rng.IntN(5)), randomEndpoint(rng, h))
	case 6:
		h.endpoint(fmt.Sprint("w", rng.IntN(5)), nil)
	case 7:
		randomSetChange(rng, h, sets[rng.IntN(3)])
	}
}

// policyNamed finds the ID of the model's policy called name.
func policyNamed(h *harness, name string) (calc.PolicyID, bool) {
	for id := range h.in.Policies {
		if id.Name == name {
			return id, true
		}
	}
	return calc.PolicyID{}, false
}

// setPolicy puts policy name as id (nil: removes it), and updates the endpoints that have it
// under another ID (moved to another tier, or gone), as calc does.
func (h *harness) setPolicy(name string, id *calc.PolicyID, sel string, in, out []calc.Rule) {
	old, had := policyNamed(h, name)
	if had && (id == nil || *id != old) {
		h.removePolicy(old)
		for wid, ep := range h.in.Endpoints {
			if moved := movePolicy(ep, old, id); moved != nil {
				h.endpoint(strings.TrimPrefix(wid.WorkloadID, "ns/"), moved)
			}
		}
	}
	if id != nil {
		h.policy(*id, sel, in, out)
	}
}

// movePolicy is ep with policy old moved into the tier of id (nil: removed), or nil when ep
// does not have it.
func movePolicy(ep *calc.WorkloadEndpoint, old calc.PolicyID, id *calc.PolicyID) *calc.WorkloadEndpoint {
	var tiers []calc.TierInfo
	found := false
	for _, ti := range ep.Tiers {
		strip := func(ids []calc.PolicyID) []calc.PolicyID {
			var out []calc.PolicyID
			for _, x := range ids {
				if x == old {
					found = true
					continue
				}
				out = append(out, x)
			}
			return out
		}
		ti.IngressPolicies, ti.EgressPolicies = strip(ti.IngressPolicies), strip(ti.EgressPolicies)
		if id != nil && ti.Name == id.Tier {
			ti.IngressPolicies = append(ti.IngressPolicies, *id)
		}
		if len(ti.IngressPolicies)+len(ti.EgressPolicies) > 0 {
			tiers = append(tiers, ti)
		}
	}
	if !found {
		return nil
	}
	c := *ep
	c.Tiers = tiers
	return &c
}

// randomSetChange adds or removes a member of IP set id, or sends or removes the set.
func randomSetChange(rng *rand.Rand, h *harness, id string) {
	if s := h.in.IPSets[id]; s != nil && rng.IntN(3) > 0 {
		m := calc.IPSetMember{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 65, byte(rng.IntN(3)), 0}), 24+rng.IntN(9))}
		if rng.IntN(2) == 0 {
			s.Change([]calc.IPSetMember{m}, nil)
		} else {
			s.Change(nil, []calc.IPSetMember{m})
		}
		return
	}
	if rng.IntN(2) == 0 {
		h.ipset(id, "10.65.0.0/24", "fd5c::/64")
	} else {
		delete(h.in.IPSets, id)
	}
}

func randomRules(rng *rand.Rand, sets []string) []calc.Rule {
	var out []calc.Rule
	for range rng.IntN(4) {
		r := calc.Rule{Action: []string{calc.RuleAllow, calc.RuleDeny, calc.RulePass}[rng.IntN(3)]}
		if rng.IntN(2) == 0 {
			r.Protocol, r.DstPorts = 6, ports(uint16(80+rng.IntN(3)))
		}
		if rng.IntN(2) == 0 {
			r.SrcIPSetIDs = []string{sets[rng.IntN(len(sets))]}
		}
		out = append(out, r)
	}
	return out
}

// randomEndpoint is an endpoint on one of three interfaces (two endpoints may claim one) with
// random tiers of the model's policies, profiles and a spoofing exception.
func randomEndpoint(rng *rand.Rand, h *harness) *calc.WorkloadEndpoint {
	var tiers []calc.TierInfo
	for _, tier := range []string{"default", "t1"} {
		var ids []calc.PolicyID
		for i := range 6 {
			if id, ok := policyNamed(h, fmt.Sprint("p", i)); ok && id.Tier == tier && rng.IntN(2) == 0 {
				ids = append(ids, id)
			}
		}
		if rng.IntN(8) == 0 { // a policy calc never sent (it matches nothing)
			ids = append(ids, calc.PolicyID{Tier: tier, Kind: "gnp", Name: "ghost"})
		}
		if len(ids) > 0 {
			ti := ingress(tier, ids...)
			if rng.IntN(2) == 0 {
				ti.EgressPolicies, ti.DefaultAction = ids, "Pass"
			}
			tiers = append(tiers, ti)
		}
	}
	ep := workload(fmt.Sprintf("cali%011d", rng.IntN(3)), tiers)
	if rng.IntN(2) == 0 {
		ep.ProfileIDs = []string{fmt.Sprint("prof", rng.IntN(2))}
	}
	if rng.IntN(3) == 0 {
		ep.AllowSpoofedSourcePrefixes = []netip.Prefix{netip.MustParsePrefix("10.65.50.0/24")}
	}
	return ep
}

// TestInterfaceOwner: of two endpoints claiming one interface, the one with the lower ID owns
// it (its chains are the dispatch maps' targets); when it goes, the other takes over.
func TestInterfaceOwner(t *testing.T) {
	h := newHarness(t, false)
	deny, allow := gnpID("deny"), gnpID("allow")
	h.policy(deny, "a", []calc.Rule{{Action: calc.RuleDeny}}, nil)
	h.policy(allow, "b", []calc.Rule{{Action: calc.RuleAllow}}, nil)
	h.endpoint("b", workload("cali11111111111", []calc.TierInfo{ingress("default", allow)}))
	h.endpoint("a", workload("cali11111111111", []calc.TierInfo{ingress("default", deny)}))
	h.build()
	owner := h.chainRules(h.workloadChain("cali11111111111", false))
	if !strings.Contains(owner, rules.GroupChain(rules.Filter, false, []calc.PolicyID{deny})) {
		t.Fatalf("endpoint a (the lower ID) does not own the interface:\n%s", owner)
	}
	h.endpoint("a", nil)
	h.build()
	owner = h.chainRules(h.workloadChain("cali11111111111", false))
	if !strings.Contains(owner, rules.GroupChain(rules.Filter, false, []calc.PolicyID{allow})) {
		t.Errorf("endpoint b did not take the interface over:\n%s", owner)
	}
	if strings.Contains(h.fake.Dump(), rules.GroupChain(rules.Filter, false, []calc.PolicyID{deny})) {
		t.Error("the chain of the endpoint that went stayed")
	}
}

// TestSetsInPlace: a member added to a calc IP set is an element added to its nft set (not the
// set written again); a set a rule looks up that calc did not send is an empty stand-in until
// calc sends it, and the stand-in goes when no rule looks it up any more.
func TestSetsInPlace(t *testing.T) {
	h := newHarness(t, true)
	id := gnpID("p")
	h.ipset("s:a", "10.65.0.1/32")
	h.policy(id, "a", []calc.Rule{{Action: calc.RuleAllow, SrcIPSetIDs: []string{"s:a", "s:later"}}}, nil)
	h.endpoint("w", workload("cali11111111111", []calc.TierInfo{ingress("default", id)}))
	h.build()
	v4 := h.b.Tables()[0]
	if s := v4.Set(rules.SetName(nft.IPv4, "s:later")); s == nil || len(s.Elements) != 0 {
		t.Fatalf("no empty stand-in for s:later: %v", s)
	}
	h.in.IPSets["s:a"].Change([]calc.IPSetMember{{Prefix: netip.MustParsePrefix("10.65.0.9/32")}}, nil)
	h.build()
	for _, op := range h.fake.LastBatch().Ops {
		if op.Kind != nft.OpAddElements {
			t.Errorf("adding a member made %s %s, want only an element added", op.Kind, op.Name)
		}
	}
	h.ipset("s:later", "10.65.1.0/24")
	h.build()
	if s := v4.Set(rules.SetName(nft.IPv4, "s:later")); s == nil || len(s.Elements) != 1 {
		t.Errorf("s:later as calc sent it: %v", s)
	}
	delete(h.in.IPSets, "s:later")
	h.policy(id, "a", []calc.Rule{{Action: calc.RuleAllow, SrcIPSetIDs: []string{"s:a"}}}, nil)
	h.build()
	for i, v := range []nft.IPVersion{nft.IPv4, nft.IPv6} {
		if s := h.b.Tables()[i].Set(rules.SetName(v, "s:later")); s != nil {
			t.Errorf("%s: s:later stayed after calc removed it and no rule looks it up", s.Name)
		}
	}
}

// TestDescribe: the quarantine's names for the objects of the tables: the policies of a group
// chain, a profile, the endpoints of a workload chain, a calc IP set; none for a static chain.
func TestDescribe(t *testing.T) {
	h := newHarness(t, false)
	id := gnpID("p")
	h.ipset("s:a", "10.65.0.1/32")
	h.policy(id, "a", []calc.Rule{{Action: calc.RuleAllow, SrcIPSetIDs: []string{"s:a"}}}, nil)
	h.profile("prof", nil, nil)
	h.endpoint("w", workload("cali11111111111", []calc.TierInfo{ingress("default", id)}, "prof"))
	h.build()
	for _, c := range []struct {
		kind        nft.ObjectKind
		name        string
		label, what string
	}{
		{nft.ObjectChain, rules.GroupChain(rules.Filter, false, []calc.PolicyID{id}), "policy", "GlobalNetworkPolicy p"},
		{nft.ObjectChain, rules.ProfileChain(rules.Filter, "prof", false), "profile", "Profile prof"},
		{nft.ObjectChain, h.workloadChain("cali11111111111", false), "endpoint", "WorkloadEndpoint ns/w/eth0"},
		{nft.ObjectSet, rules.SetName(nft.IPv4, "s:a"), "set", "IP set s:a (" + rules.SetName(nft.IPv4, "s:a") + ")"},
		{nft.ObjectChain, rules.WorkloadRPFChain(), "", ""},
	} {
		if label, what := h.b.Describe(c.kind, c.name); label != c.label || what != c.what {
			t.Errorf("Describe(%s): %q %q, want %q %q", c.name, label, what, c.label, c.what)
		}
	}
}

// TestWithheldValue: an endpoint whose spoofing exception the quarantine withholds has its
// prefixes left out of the anti-spoofing chain and its traffic dropped by the dispatch maps;
// once released (and the builder told), it is as before.
func TestWithheldValue(t *testing.T) {
	h := newHarness(t, false)
	ep := workload("cali11111111111", nil)
	ep.AllowSpoofedSourcePrefixes = []netip.Prefix{netip.MustParsePrefix("10.65.50.0/24")}
	h.endpoint("w", ep)
	h.build()
	keys := h.b.ValuesOf(nft.Object{Kind: nft.ObjectChain, Name: rules.WorkloadRPFChain()}, nil)
	if len(keys) != 1 {
		t.Fatalf("values of the anti-spoofing chain: %q", keys)
	}
	if label, _ := h.b.DescribeValue(keys[0]); label != "endpoint" || h.b.ValueCurrent(h.in.Endpoints, keys[0]) != ep {
		t.Fatalf("value %q: label %q, current %v", keys[0], label, h.b.ValueCurrent(h.in.Endpoints, keys[0]))
	}
	allowed := h.workloadChain("cali11111111111", true)
	h.withheld[keys[0]] = true
	h.b.Invalidate(keys[0])
	h.build()
	if got := h.chainRules(rules.WorkloadRPFChain()); strings.Contains(got, "10.65.50.0/24") {
		t.Errorf("the withheld prefix is still allowed:\n%s", got)
	}
	from, _ := rules.DispatchMaps()
	if v := h.b.Tables()[0].Map(from).Elements[nft.IfnameKey("cali11111111111")]; v != nft.Drop() {
		t.Errorf("the withheld endpoint's traffic goes to %v, want a drop", v)
	}
	delete(h.withheld, keys[0])
	h.b.Invalidate(keys[0])
	h.build()
	if !strings.Contains(h.chainRules(rules.WorkloadRPFChain()), "10.65.50.0/24") || h.workloadChain("cali11111111111", true) != allowed {
		t.Errorf("the released endpoint is not as before:\n%s", h.chainRules(rules.WorkloadRPFChain()))
	}
}
