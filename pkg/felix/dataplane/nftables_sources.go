package dataplane

import (
	"fmt"
	"slices"
	"strings"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// Some static chains hold user values: the anti-spoofing chain the prefixes each endpoint may
// spoof (allowSpoofedSourcePrefixes), the failsafe chains the failsafe entries of the
// configuration. A static chain cannot be replaced by a drop, so when the kernel refuses one,
// the quarantine takes the values it holds instead (those holding the element the kernel named,
// or all of them when it named none): a quarantined value is left out of the static chains,
// which narrows what they allow (fail closed: a failsafe entry no longer opens its port, an
// endpoint may no longer spoof those prefixes), and a quarantined endpoint's traffic is dropped
// as a whole (its dispatch verdicts are drops), so that the fault is seen where it is.

// staticSource is a user value of the static chains.
type staticSource struct {
	key    string   // its quarantine name (see endpointSource, failsafeSource)
	chains []string // the static chains that hold it, in every table
	holds  func(nft.Key) bool
}

// sourceIndex is what the last volatile build made of the user values.
type sourceIndex struct {
	rendered  []staticSource                     // the values in the static chains
	endpoints map[string]calc.WorkloadEndpointID // every spoofing endpoint, by key
	failsafes map[string]failsafeValue           // every failsafe entry, by key
	withheld  func(key string) bool              // the quarantine's (never nil)
}

func newSourceIndex() sourceIndex {
	return sourceIndex{endpoints: map[string]calc.WorkloadEndpointID{}, failsafes: map[string]failsafeValue{},
		withheld: func(string) bool { return false }}
}

// failsafeValue is a failsafe entry and its direction.
type failsafeValue struct {
	in bool
	pp rules.ProtoPort
}

func endpointSource(id calc.WorkloadEndpointID) string {
	return "endpoint " + id.OrchestratorID + "/" + id.WorkloadID + "/" + id.EndpointID
}

func failsafeSource(f failsafeValue) string {
	dir := "out"
	if f.in {
		dir = "in"
	}
	return fmt.Sprintf("failsafe-%s %s", dir, failsafeText(f.pp))
}

// failsafeText is a failsafe entry as the configuration spells it: tcp:198.18.0.0/16:22.
func failsafeText(pp rules.ProtoPort) string {
	proto := map[uint8]string{nft.ProtoTCP: "tcp", nft.ProtoUDP: "udp", nft.ProtoSCTP: "sctp"}[pp.Protocol]
	if pp.Net.IsValid() {
		return fmt.Sprintf("%s:%s:%d", proto, pp.Net, pp.Port)
	}
	return fmt.Sprintf("%s:%d", proto, pp.Port)
}

// describeSource is the metric label and description of a user value of the static chains.
func (b *rulesetBuilder) describeSource(key string) (label, what string) {
	if id, ok := b.sources.endpoints[key]; ok {
		return "endpoint", "WorkloadEndpoint " + id.WorkloadID + "/" + id.EndpointID + " (allowSpoofedSourcePrefixes)"
	}
	if f, ok := b.sources.failsafes[key]; ok {
		param := "FailsafeOutboundHostPorts"
		if f.in {
			param = "FailsafeInboundHostPorts"
		}
		return "failsafe", "FelixConfiguration " + param + " " + failsafeText(f.pp)
	}
	return "", ""
}

// spoofAllowed lists the spoofing exceptions of the endpoints, leaving out the quarantined
// endpoints', and records them as user values of the anti-spoofing chain.
func (b *rulesetBuilder) spoofAllowed(m *model) []rules.SpoofAllowed {
	var out []rules.SpoofAllowed
	clear(b.sources.endpoints)
	for id, ep := range m.weps {
		if len(ep.AllowSpoofedSourcePrefixes) == 0 {
			continue
		}
		key := endpointSource(id)
		b.sources.endpoints[key] = id
		if b.sources.withheld(key) {
			continue
		}
		for _, p := range ep.AllowSpoofedSourcePrefixes {
			out = append(out, rules.SpoofAllowed{Iface: ep.Name, Prefix: p})
		}
		iface := nft.IfnameKey(ep.Name).Raw()
		b.sources.rendered = append(b.sources.rendered, staticSource{key: key, chains: []string{rules.WorkloadRPFChain()},
			holds: func(k nft.Key) bool { return strings.HasPrefix(k.Raw(), iface) }})
	}
	return out
}

// staticConfig is the configuration the static chains are rendered with: the failsafe entries
// less the quarantined ones, recorded as user values of the failsafe chains.
func (b *rulesetBuilder) staticConfig(failsafeChains []string) *rules.Config {
	clear(b.sources.failsafes)
	cfg := *b.cfg
	keep := func(in bool, pps []rules.ProtoPort) []rules.ProtoPort {
		var out []rules.ProtoPort
		for _, pp := range pps {
			f := failsafeValue{in: in, pp: pp}
			key := failsafeSource(f)
			b.sources.failsafes[key] = f
			if b.sources.withheld(key) {
				continue
			}
			out = append(out, pp)
			b.sources.rendered = append(b.sources.rendered, staticSource{key: key, chains: failsafeChains, holds: f.holds})
		}
		return out
	}
	cfg.FailsafeIn, cfg.FailsafeOut = keep(true, b.cfg.FailsafeIn), keep(false, b.cfg.FailsafeOut)
	return &cfg
}

// holds reports whether key k of a failsafe list (protocol . port, or network . protocol .
// port) is one of the entry's.
func (f failsafeValue) holds(k nft.Key) bool {
	key := nft.ConcatElem(nft.ProtoKey(f.pp.Protocol).Elem(), nft.PortElem(f.pp.Port))
	t := nft.Concat(nft.TypeInetProto, nft.TypeInetService)
	if f.pp.Net.IsValid() {
		key = nft.ConcatElem(nft.PrefixElem(f.pp.Net), key)
		addr := nft.TypeIPv6Addr
		if f.pp.Net.Addr().Is4() {
			addr = nft.TypeIPv4Addr
		}
		t = nft.Concat(addr, t)
	}
	return t.Contains(key, k)
}

// sourcesOf lists the user values of static chain o that hold one of keys (all of them when
// keys is empty): what to quarantine when the kernel refuses o.
func (b *rulesetBuilder) sourcesOf(o nft.Object, keys []nft.Key) []string {
	var out []string
	for _, s := range b.sources.rendered {
		if !slices.Contains(s.chains, o.Name) {
			continue
		}
		if len(keys) == 0 || slices.ContainsFunc(keys, s.holds) {
			out = append(out, s.key)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sourceCurrent identifies the current version of a user value (nil when it is gone): the
// endpoint, or the failsafe entry (the configuration does not change while felix runs).
func (b *rulesetBuilder) sourceCurrent(m *model, key string) any {
	if id, ok := b.sources.endpoints[key]; ok {
		if ep := m.weps[id]; ep != nil {
			return ep
		}
		return nil
	}
	if _, ok := b.sources.failsafes[key]; ok {
		return key
	}
	return nil
}

// invalidateSource makes the next build render again what a user value's quarantine, or its
// release, changes: the static chains and the endpoint's dispatch verdicts.
func (b *rulesetBuilder) invalidateSource(m *model, key string) {
	m.volatileChanged = true
	if id, ok := b.sources.endpoints[key]; ok {
		if e := b.weps[id]; e != nil {
			e.stale = true
			m.changedWEPs[id] = true
		}
	}
}

// dispatchVerdicts are an installed endpoint's dispatch verdicts: drops while it is
// quarantined.
func (b *rulesetBuilder) dispatchVerdicts(id calc.WorkloadEndpointID, e *wepEntry) (nft.Key, nft.Verdict, nft.Verdict) {
	key, from, to := rules.WorkloadDispatch(e.src.Name, e.ep)
	if b.sources.withheld(endpointSource(id)) {
		return key, nft.Drop(), nft.Drop()
	}
	return key, from, to
}
