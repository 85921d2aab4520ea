package dataplane

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/netnstest"
	"github.com/calico-host/calico-host/pkg/nft/kernel"
)

// randomState is a random but consistent calc output: policies (names shared across tiers, so
// that a transition may move a policy to another tier), big policies (protocol splits), policies
// shared by endpoints (inline and out-of-line members), profiles, IP sets (some never sent:
// stand-ins), pools, host endpoints, endpoints with spoofing exceptions.
func randomState(rng *rand.Rand) []calc.Update {
	var out []calc.Update
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	sets := []string{"s:x0", "s:x1", "s:x2", "s:x3"}
	for i, id := range sets[:rng.IntN(len(sets)+1)] {
		out = append(out, ipset(id, fmt.Sprintf("10.65.%d.0/24", i), fmt.Sprintf("fd5c:%d::/64", i)))
	}
	if rng.IntN(2) == 0 {
		out = append(out, namedPortSet("np:web", 6, uint16(8000+rng.IntN(3)), "10.65.9.1/32", "fd5c:9::1/128"))
	}
	tiers := []string{"default", "t1", "t2"}
	byTier := map[string][]calc.PolicyID{}
	for i := range 8 {
		if rng.IntN(4) == 0 {
			continue
		}
		tr := tiers[rng.IntN(len(tiers))]
		id := calc.PolicyID{Tier: tr, Kind: "gnp", Name: fmt.Sprintf("p%d", i)}
		in, eg := randomRules(rng, sets), randomRules(rng, sets)
		out = append(out, policySel(id, pick("a", "b"), in, eg))
		byTier[tr] = append(byTier[tr], id)
	}
	for i := range 3 {
		if rng.IntN(2) == 0 {
			out = append(out, profile(fmt.Sprintf("prof%d", i), randomRules(rng, sets), randomRules(rng, sets)))
		}
	}
	for i := range 4 {
		if rng.IntN(4) == 0 {
			continue
		}
		var ts []calc.TierInfo
		for _, tr := range tiers {
			pols := byTier[tr]
			if len(pols) == 0 || rng.IntN(3) == 0 {
				continue
			}
			sub := pols
			if rng.IntN(2) == 0 {
				sub = pols[:1+rng.IntN(len(pols))]
			}
			if rng.IntN(8) == 0 { // a policy calc never sent (it matches nothing)
				sub = append(slices.Clip(sub), calc.PolicyID{Tier: tr, Kind: "gnp", Name: "ghost"})
			}
			ti := calc.TierInfo{Name: tr, DefaultAction: pick("Deny", "Pass"), IngressPolicies: sub}
			if rng.IntN(2) == 0 {
				ti.EgressPolicies = sub
			}
			ts = append(ts, ti)
		}
		profs := []string{"prof0", "prof1", "prof2"}
		rng.Shuffle(len(profs), func(a, b int) { profs[a], profs[b] = profs[b], profs[a] })
		w := wep(fmt.Sprintf("w%d", i), fmt.Sprintf("cali%011d", i), []string{fmt.Sprintf("10.65.9.%d/32", i)},
			withV6(fmt.Sprintf("fd5c:9::%d/128", i)), withTiers(ts...), withProfiles(profs[:rng.IntN(3)]...))
		if rng.IntN(3) == 0 {
			w.Endpoint.AllowSpoofedSourcePrefixes = []netip.Prefix{pfx(pick("10.65.50.0/24", "fd5c:50::/64"))}
		}
		if rng.IntN(3) == 0 {
			w.Endpoint.IPv4NAT = []calc.NATInfo{{ExtIP: addr(fmt.Sprintf("198.18.100.%d", i)), IntIP: addr(fmt.Sprintf("10.65.9.%d", i))}}
		}
		if prev, ok := out[len(out)-1].(calc.WorkloadEndpointUpdate); ok && rng.IntN(3) == 0 {
			w.Endpoint.Tiers, w.Endpoint.ProfileIDs = prev.Endpoint.Tiers, prev.Endpoint.ProfileIDs // shared chains
		}
		out = append(out, w)
	}
	if rng.IntN(2) == 0 {
		out = append(out, calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "v4", CIDR: pfx("10.65.0.0/16"), NATOutgoing: rng.IntN(2) == 0}})
	}
	if rng.IntN(2) == 0 {
		out = append(out, calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "v6", CIDR: pfx("fd5c::/48"), NATOutgoing: rng.IntN(2) == 0}})
	}
	if d := byTier["default"]; rng.IntN(2) == 0 && len(d) > 0 {
		hep := &calc.HostEndpoint{Name: "host1-eth0", InterfaceName: "eth0",
			Tiers: []calc.TierInfo{tier("default", d[:1], d[:1])}, ProfileIDs: []string{"prof0"}}
		if rng.IntN(2) == 0 {
			hep.ForwardTiers = []calc.TierInfo{tier("default", d, nil)}
		}
		if rng.IntN(2) == 0 {
			hep.UntrackedTiers = []calc.TierInfo{tier("default", d[:1], d[len(d)-1:])}
		}
		if rng.IntN(2) == 0 {
			hep.PreDNATTiers = []calc.TierInfo{tier("default", d[len(d)-1:], nil)}
		}
		out = append(out, calc.HostEndpointUpdate{Endpoint: hep})
	}
	if d := byTier["default"]; rng.IntN(3) == 0 && len(d) > 0 {
		out = append(out, calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: "host1-all", InterfaceName: "*",
			Tiers: []calc.TierInfo{tier("default", d[len(d)-1:], nil)}, ForwardTiers: []calc.TierInfo{tier("default", d[:1], d[:1])}}})
	}
	return out
}

// randomRules: a few rules, or many (a protocol split), of random protocols and actions.
func randomRules(rng *rand.Rand, sets []string) []calc.Rule {
	n := rng.IntN(4)
	if rng.IntN(3) == 0 {
		n = 32 + rng.IntN(12)
	}
	var rs []calc.Rule
	for range n {
		r := calc.Rule{Action: []string{calc.RuleAllow, calc.RuleDeny, calc.RulePass, calc.RuleLog}[rng.IntN(4)]}
		switch rng.IntN(6) {
		case 0, 1:
			r.Protocol, r.DstPorts = 6, ports(uint16(1+rng.IntN(1000)))
		case 2:
			r.Protocol = 17
		case 3:
			r.Protocol = []uint8{1, 58}[rng.IntN(2)]
		case 4:
			r.NotProtocol = 6
		}
		if rng.IntN(4) == 0 {
			r.SrcIPSetIDs = []string{sets[rng.IntN(len(sets))]}
		}
		if (r.Protocol == 6 || r.Protocol == 17) && rng.IntN(4) == 0 {
			r.DstPorts, r.DstNamedPortIPSetIDs = nil, []string{"np:web"} // calc: named ports need a port protocol
		}
		rs = append(rs, r)
	}
	return rs
}

// randomStates are n random states.
func randomStates(seed uint64, n int) ([]([]calc.Update), *rand.Rand) {
	rng := rand.New(rand.NewPCG(seed, 16))
	var states [][]calc.Update
	for range n {
		states = append(states, randomState(rng))
	}
	return states, rng
}

// transitionIfaces are the interfaces of the random states.
func transitionIfaces() []string {
	ifs := []string{"eth0"}
	for i := range 4 {
		ifs = append(ifs, fmt.Sprintf("cali%011d", i))
	}
	return ifs
}

// TestRandomTransitions: from any random state to any other, the incrementally built tables
// commit and equal the tables built from scratch for the new state.
func TestRandomTransitions(t *testing.T) {
	cfg := Config{Hostname: "host1", IPv6Support: true, WorkloadSourceSpoofing: true, FloatingIPs: true}
	seed := uint64(7)
	if s := os.Getenv("TRANSITIONS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	states, rng := randomStates(seed, 12)
	ifs := transitionIfaces()
	want := make([]string, len(states))
	for i, st := range states {
		h := newHarness(t, cfg)
		h.up(ifs...)
		h.send(slices.Clone(st)...)
		want[i] = h.fake.Dump()
	}
	h := newHarness(t, cfg)
	h.up(ifs...)
	cur := -1
	for step := range 300 {
		next := rng.IntN(len(states))
		var from []calc.Update
		if cur >= 0 {
			from = states[cur]
		}
		h.send(changes(from, states[next])...)
		if diff := cmp.Diff(want[next], h.fake.Dump()); diff != "" {
			t.Fatalf("step %d, state %d -> %d: table differs (-want +got):\n%s", step, cur, next, diff)
		}
		cur = next
	}
}

// changes is the batch that turns the model holding from into one holding to, as calc sends it:
// only what was removed or differs.
func changes(from, to []calc.Update) []calc.Update {
	old := map[string]calc.Update{}
	for _, u := range from {
		k, _ := removal(u)
		old[k] = u
	}
	out := transition(from, nil)[:0]
	keep := map[string]bool{}
	for _, u := range to {
		k, _ := removal(u)
		keep[k] = true
	}
	for _, u := range from {
		if k, rm := removal(u); !keep[k] {
			out = append(out, rm)
		}
	}
	for _, u := range to {
		if k, _ := removal(u); !reflect.DeepEqual(old[k], u) {
			out = append(out, u)
		}
	}
	return out
}

// TestRandomTransitionsKernel walks random transitions on the kernel (a namespace of its own):
// every transaction commits and the kernel's ruleset equals the one a fresh dataplane programs
// for the same state (in a second namespace).
func TestRandomTransitionsKernel(t *testing.T) {
	netnstest.Require(t, "nft", "sysctl")
	cfg := Config{Hostname: "host1", IPv6Support: true, WorkloadSourceSpoofing: true, FloatingIPs: true}
	states, rng := randomStates(11, 8)
	fresh, walk := netnstest.New(t, "fresh"), netnstest.New(t, "walk")
	want := make([]string, len(states))
	for i, st := range states {
		h := newKernelHarness(t, cfg, fresh)
		h.send(slices.Clone(st)...)
		if n := h.dp.Quarantined(); n != 0 { // a quarantined state would compare equal in both namespaces
			t.Fatalf("state %d: %d objects quarantined in a fresh build", i, n)
		}
		want[i] = canonicalRuleset(fresh.Exec(t, "nft", "list", "ruleset"))
		fresh.Exec(t, "nft", "flush", "ruleset")
	}
	h := newKernelHarness(t, cfg, walk)
	cur := -1
	for step := range 60 {
		next := rng.IntN(len(states))
		var from []calc.Update
		if cur >= 0 {
			from = states[cur]
		}
		h.send(changes(from, states[next])...)
		if n := h.dp.Quarantined(); n != 0 {
			t.Fatalf("step %d: %d objects quarantined", step, n)
		}
		if diff := cmp.Diff(want[next], canonicalRuleset(walk.Exec(t, "nft", "list", "ruleset"))); diff != "" {
			t.Fatalf("step %d, state %d -> %d: ruleset differs (-want +got):\n%s", step, cur, next, diff)
		}
		cur = next
	}
}

// newKernelHarness is newHarness on the kernel's nftables in namespace ns.
func newKernelHarness(t *testing.T, cfg Config, ns *netnstest.NS) *harness {
	f, err := os.Open(ns.Path())
	if err != nil {
		t.Fatal(err)
	}
	kb, err := kernel.New(kernel.Config{NetNS: int(f.Fd())})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kb.Close() })
	h := &harness{t: t, routes: &fakeRoutes{}, ifaces: newFakeIfaces(), vxlan: &fakeVXLAN{}}
	dp, err := New(FelixDefaults(cfg), testLogger(t), WithNFTBackend(kb), WithRoutes(h.routes), WithInterfaces(h.ifaces), WithVXLAN(h.vxlan))
	if err != nil {
		t.Fatal(err)
	}
	h.dp = dp
	h.dp.model.inSync, h.dp.model.ifacesInSync = true, true
	h.up(transitionIfaces()...)
	return h
}

// canonicalRuleset sorts the objects of each table of an `nft list ruleset` listing (the kernel
// lists them in the order they were made) and the elements of each set and map; rule order
// is kept.
func canonicalRuleset(listing string) string {
	var out, block []string
	var blocks [][]string
	flush := func() {
		slices.SortFunc(blocks, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
		for _, b := range blocks {
			out = append(out, b...)
		}
		blocks = nil
	}
	for _, line := range strings.Split(listing, "\n") {
		switch {
		case line == "":
		case strings.HasPrefix(line, "\t}"):
			if !strings.HasPrefix(block[0], "chain ") {
				block = canonicalElements(block)
			}
			blocks = append(blocks, block)
			block = nil
		case strings.HasPrefix(line, "\t"):
			block = append(block, strings.TrimSpace(line))
		default:
			flush()
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// canonicalElements puts the elements of a set or map listing in order.
func canonicalElements(block []string) []string {
	text := strings.Join(block[1:], " ")
	i := strings.Index(text, "elements = { ")
	if i < 0 {
		return block
	}
	elems := strings.Split(strings.TrimSuffix(text[i+len("elements = { "):], " }"), ", ")
	slices.Sort(elems)
	return []string{block[0], text[:i], strings.Join(elems, ", ")}
}
