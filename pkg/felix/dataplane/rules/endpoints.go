package rules

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
)

// Ref is a chain that an endpoint chain jumps to: a policy group or a profile.
type Ref struct {
	Layer   Layer
	Egress  bool
	Profile string          // a profile's chain when set
	Group   []calc.PolicyID // else the chain of this policy group (one or more policies)
}

// Chain is the name of the referenced chain; it identifies the reference.
func (r Ref) Chain() string {
	if r.Profile != "" {
		return ProfileChain(r.Layer, r.Profile, r.Egress)
	}
	return GroupChain(r.Layer, r.Egress, r.Group)
}

// Endpoint is the rendering of host endpoints: their chains, the same in the tables of both
// IP versions, and the chains they jump to.
type Endpoint struct {
	Chains []*nft.Chain
	Refs   []Ref
}

func (e *Endpoint) add(c *nft.Chain, refs []Ref) {
	e.Chains = append(e.Chains, c)
	e.Refs = append(e.Refs, refs...)
}

// chainKind selects the template of an endpoint chain.
type chainKind uint8

const (
	kindNormal    chainKind = iota // conntrack, tiers with end-of-tier drops, profiles, final drop
	kindForward                    // applyOnForward: tiers with end-of-tier drops, no profiles, no final drop; no tiers means allow
	kindUntracked                  // raw doNotTrack: notrack on allow; no drops of its own
	kindPreDNAT                    // mangle preDNAT: no drops of its own
)

// chainSpec describes one endpoint chain.
type chainSpec struct {
	name     string
	layer    Layer
	kind     chainKind
	egress   bool   // which policy direction applies
	failsafe string // chain jumped to before policy (host endpoints)
	encap    bool   // drop encapsulated traffic (from workloads)
	tiers    []calc.TierInfo
	profiles []string
	group    Grouper
}

// endpointChain renders an endpoint chain (Calico's endpointIptablesChain): conntrack, mark
// reset, then each tier's policy groups, then the profiles, then the final drop.
//
// A forward chain (applyOnForward policy of a host endpoint) has neither profiles nor the final
// drop, as in Project Calico: what no tier accepted or dropped (passed out of the last tier by a
// Pass rule or a Pass default action) returns to filter FORWARD without a verdict and goes on,
// and filter FORWARD accepts it. Without any policy in its direction it allows (Calico allows
// when the endpoint has no forward tier at all, and returns without a verdict when its forward
// tiers only have policies of the other direction: both end in filter FORWARD's accept).
func endpointChain(cfg *Config, s chainSpec) (*nft.Chain, []Ref) {
	a, p := cfg.Marks.Accept, cfg.Marks.Pass
	var rs []nft.Rule
	if s.kind == kindNormal || s.kind == kindForward {
		rs = append(rs, rule(nft.CTStateIn(nft.CTStateEstablished|nft.CTStateRelated), nft.Accept()))
		if cfg.DropInvalid {
			rs = append(rs, rule(nft.CTStateIn(nft.CTStateInvalid), nft.Drop()))
		}
	}
	if s.failsafe != "" {
		rs = append(rs, rule(nft.Jump(s.failsafe)))
	}
	rs = append(rs, rule(clearBits(a|p)))
	if s.encap {
		rs = append(rs, encapDrops(cfg)...)
	}
	tierRules, refs := tiers(cfg, s)
	rs = append(rs, tierRules...)
	switch {
	case s.kind == kindForward && len(refs) == 0:
		rs = append(rs, rule(setBits(a), nft.Return()).WithComment("Allow forwarded traffic by default"))
	case s.kind == kindNormal:
		for _, prof := range s.profiles {
			ref := Ref{Layer: s.layer, Profile: prof, Egress: s.egress}
			refs = append(refs, ref)
			rs = append(rs, rule(nft.Jump(ref.Chain())), rule(isSet(a), nft.Return()))
		}
		rs = append(rs, rule(nft.Counter(), cfg.deny(s.layer)).WithComment(noProfileComment))
	}
	return &nft.Chain{Name: s.name, Rules: rs}, refs
}

// Comments of an endpoint chain's own drops: a tier's end, and after the profiles.
const (
	endOfTierPrefix  = "End of tier "
	endOfTierSuffix  = ". Drop if no policies passed packet"
	noProfileComment = "Drop if no profiles matched"
)

// EndpointDrop reads the comment of an endpoint chain's own drop (what a trace names): a tier's
// end gives its tier, the drop after the profiles noProfile; ok is false for other comments.
func EndpointDrop(comment string) (tier string, noProfile, ok bool) {
	if comment == noProfileComment {
		return "", true, true
	}
	t, found := strings.CutPrefix(comment, endOfTierPrefix)
	if !found {
		return "", false, false
	}
	t, found = strings.CutSuffix(t, endOfTierSuffix)
	return t, false, found
}

// tiers renders the tier blocks of the policy direction of s. A tier jumps to each of its
// policy groups in turn while no group set the accept or pass bit; the first jump needs no
// test (both bits are clear when a tier starts). Then it returns if a policy accepted and,
// unless the tier's default action is Pass (or the chain has no drops of its own), drops what
// no policy passed.
func tiers(cfg *Config, s chainSpec) ([]nft.Rule, []Ref) {
	a, p := cfg.Marks.Accept, cfg.Marks.Pass
	var rs []nft.Rule
	var refs []Ref
	for _, t := range s.tiers {
		pols := t.IngressPolicies
		if s.egress {
			pols = t.EgressPolicies
		}
		if len(pols) == 0 {
			continue
		}
		first := rule()
		if len(refs) > 0 { // a later tier: clear the pass bit of the one before
			rs = append(rs, rule(clearBits(p)).WithComment("Start of tier "+t.Name))
		} else {
			first = first.WithComment("Start of tier " + t.Name)
		}
		for i, g := range s.group(pols) {
			ref := Ref{Layer: s.layer, Group: g, Egress: s.egress}
			refs = append(refs, ref)
			if i == 0 {
				first.Exprs = []nft.Expr{nft.Jump(ref.Chain())}
				rs = append(rs, first)
				continue
			}
			rs = append(rs, rule(isClear(a|p), nft.Jump(ref.Chain())))
		}
		if s.kind == kindUntracked {
			rs = append(rs, rule(isSet(a), nft.Notrack(), nft.Return()))
		} else {
			rs = append(rs, rule(isSet(a), nft.Return()))
		}
		if (s.kind == kindNormal || s.kind == kindForward) && t.DefaultAction != "Pass" {
			rs = append(rs, rule(isClear(p), nft.Counter(), cfg.deny(s.layer)).
				WithComment(endOfTierPrefix+t.Name+endOfTierSuffix))
		}
	}
	return rs, refs
}

// encapDrops drop VXLAN and IP-in-IP packets sent by a workload unless configured otherwise.
func encapDrops(cfg *Config) []nft.Rule {
	var rs []nft.Rule
	if !cfg.AllowVXLANFromWorkloads {
		rs = append(rs, rule(nft.DPort(nft.ProtoUDP, nft.Port(cfg.VXLANPort)), nft.Counter(), nft.Drop()).
			WithComment("Drop VXLAN encapped packets originating in workloads"))
	}
	if !cfg.AllowIPIPFromWorkloads {
		rs = append(rs, rule(nft.L4Proto(protoIPIP), nft.Counter(), nft.Drop()).
			WithComment("Drop IPinIP encapped packets originating in workloads"))
	}
	return rs
}

// protoIPIP is IP-in-IP (ipencap).
const protoIPIP = 4

// WorkloadEndpoint renders the two chains of a local workload: cali-tw-<hash> (traffic to it,
// ingress policy) and cali-fw-<hash> (traffic from it, egress policy). Nothing in them is
// particular to the endpoint (its interface is matched by the dispatch maps, its addresses by
// the anti-spoofing chain), so they are named by what they are made of: endpoints with the same
// tiers, policy groups and profiles share their chains. g splits each tier's policies into
// groups.
func WorkloadEndpoint(cfg *Config, ep *calc.WorkloadEndpoint, g Grouper) Workload {
	var out Workload
	for _, egress := range []bool{false, true} {
		spec := chainSpec{layer: Filter, egress: egress, encap: egress, tiers: ep.Tiers, profiles: ep.ProfileIDs, group: g}
		c, refs := endpointChain(cfg, spec)
		c.Name = workloadChainName(spec, refs)
		out[b2i(egress)] = WorkloadChain{Chain: c, Refs: refs}
	}
	return out
}

// Workload is the rendering of a local workload: the chain of traffic to it (ingress policy)
// and the chain of traffic from it (egress policy).
type Workload [2]WorkloadChain

// WorkloadChain is a workload chain, the same in the tables of both IP versions, and the
// chains it jumps to.
type WorkloadChain struct {
	Chain *nft.Chain
	Refs  []Ref
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// workloadChainName names a workload chain by what it is made of: its direction, its tiers
// (names, default actions, the chains of their groups in order) and its profiles, which
// determine its rules (with the Config, the same for every chain).
func workloadChainName(s chainSpec, refs []Ref) string {
	h := sha256.New()
	ref := 0
	for _, t := range s.tiers {
		pols := t.IngressPolicies
		if s.egress {
			pols = t.EgressPolicies
		}
		if len(pols) == 0 {
			continue
		}
		fmt.Fprintf(h, "tier %q %q:", t.Name, t.DefaultAction)
		for covered := 0; covered < len(pols); ref++ {
			fmt.Fprintf(h, " %q", refs[ref].Chain())
			covered += len(refs[ref].Group)
		}
		h.Write([]byte{'\n'})
	}
	for _, p := range s.profiles {
		fmt.Fprintf(h, "profile %q\n", p)
	}
	sum := base64.RawURLEncoding.EncodeToString(h.Sum(nil))[:20]
	if s.egress {
		return Filter.Name(prefixFromWorkload + sum)
	}
	return Filter.Name(prefixToWorkload + sum)
}

// WorkloadDispatch returns the key of a workload interface in the dispatch maps and the
// verdicts that send its traffic to its chains (w, from WorkloadEndpoint): from it (egress
// policy) and to it (ingress).
func WorkloadDispatch(iface string, w Workload) (key nft.Key, from, to nft.Verdict) {
	return nft.IfnameKey(iface), nft.Goto(w[1].Chain.Name), nft.Goto(w[0].Chain.Name)
}

// WorkloadDispatchMaps are the (empty) verdict maps of workload dispatch, from and to.
func WorkloadDispatchMaps() (from, to *nft.Map) {
	fromName, toName := DispatchMaps()
	return &nft.Map{Name: fromName, Type: nft.TypeIfname, Elements: map[nft.Key]nft.Verdict{}},
		&nft.Map{Name: toName, Type: nft.TypeIfname, Elements: map[nft.Key]nft.Verdict{}}
}

// dispatchChain is a dispatch chain over a verdict map: `iifname vmap @map` (oifname when
// out), then the given tail rules.
func dispatchChain(name, mapName string, out bool, tail ...nft.Rule) *nft.Chain {
	vm := nft.IIFNameVmap(mapName)
	if out {
		vm = nft.OIFNameVmap(mapName)
	}
	return &nft.Chain{Name: name, Rules: append([]nft.Rule{rule(vm)}, tail...)}
}

// workloadDispatchChains are the chains that apply the workload dispatch maps; traffic of an
// unknown workload interface is dropped.
func workloadDispatchChains() []*nft.Chain {
	fromMap, toMap := DispatchMaps()
	drop := rule(nft.Counter(), nft.Drop()).WithComment("Unknown interface")
	return []*nft.Chain{
		dispatchChain(Filter.Name(chainFromWorkload), fromMap, false, drop),
		dispatchChain(Filter.Name(chainToWorkload), toMap, true, drop),
	}
}
