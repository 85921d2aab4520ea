package ruleset

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

// staticValue is a user value of the static chains.
type staticValue struct {
	key    string   // its quarantine name (see endpointKey, failsafeKey)
	chains []string // the static chains that hold it, in every table
	holds  func(nft.Key) bool
}

// values are the user values of the static chains, as the last build of the static part made
// them, and which of them the quarantine holds back.
type values struct {
	rendered  []staticValue                      // the values in the static chains
	endpoints map[string]calc.WorkloadEndpointID // every spoofing endpoint, by key
	failsafes map[string]failsafeValue           // every failsafe entry, by key
	withheld  func(key string) bool              // the quarantine's (never nil)
}

func newValues(withheld func(key string) bool) *values {
	if withheld == nil {
		withheld = func(string) bool { return false }
	}
	return &values{endpoints: map[string]calc.WorkloadEndpointID{}, failsafes: map[string]failsafeValue{},
		withheld: withheld}
}

// startBuild forgets the values of the last build of the static part.
func (vs *values) startBuild() { vs.rendered = vs.rendered[:0] }

// failsafeValue is a failsafe entry and its direction.
type failsafeValue struct {
	in bool
	pp rules.ProtoPort
}

func endpointKey(id calc.WorkloadEndpointID) string {
	return "endpoint " + id.OrchestratorID + "/" + id.WorkloadID + "/" + id.EndpointID
}

func failsafeKey(f failsafeValue) string {
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

// describe is the metric label and description of a user value of the static chains.
func (vs *values) describe(key string) (label, what string) {
	if id, ok := vs.endpoints[key]; ok {
		return "endpoint", "WorkloadEndpoint " + id.WorkloadID + "/" + id.EndpointID + " (allowSpoofedSourcePrefixes)"
	}
	if f, ok := vs.failsafes[key]; ok {
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
func (vs *values) spoofAllowed(endpoints map[calc.WorkloadEndpointID]*calc.WorkloadEndpoint) []rules.SpoofAllowed {
	var out []rules.SpoofAllowed
	clear(vs.endpoints)
	for id, ep := range endpoints {
		if len(ep.AllowSpoofedSourcePrefixes) == 0 || nft.IfnameKey(ep.Name) == (nft.Key{}) {
			continue // (no interface: nothing to exempt; it gets no chains either, see syncWorkloads)
		}
		key := endpointKey(id)
		vs.endpoints[key] = id
		if vs.withheld(key) {
			continue
		}
		for _, p := range ep.AllowSpoofedSourcePrefixes {
			out = append(out, rules.SpoofAllowed{Iface: ep.Name, Prefix: p})
		}
		iface := nft.IfnameKey(ep.Name).Raw()
		vs.rendered = append(vs.rendered, staticValue{key: key, chains: []string{rules.WorkloadRPFChain()},
			holds: func(k nft.Key) bool { return strings.HasPrefix(k.Raw(), iface) }})
	}
	return out
}

// staticConfig is the configuration the static chains are rendered with: the failsafe entries
// less the quarantined ones, recorded as user values of the failsafe chains.
func (vs *values) staticConfig(base *rules.Config, failsafeChains []string) *rules.Config {
	clear(vs.failsafes)
	cfg := *base
	keep := func(in bool, pps []rules.ProtoPort) []rules.ProtoPort {
		var out []rules.ProtoPort
		for _, pp := range pps {
			f := failsafeValue{in: in, pp: pp}
			key := failsafeKey(f)
			vs.failsafes[key] = f
			if vs.withheld(key) {
				continue
			}
			out = append(out, pp)
			vs.rendered = append(vs.rendered, staticValue{key: key, chains: failsafeChains, holds: f.holds})
		}
		return out
	}
	cfg.FailsafeIn, cfg.FailsafeOut = keep(true, base.FailsafeIn), keep(false, base.FailsafeOut)
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

// of lists the user values of static chain o that hold one of keys (all of them when keys is
// empty): what to quarantine when the kernel refuses o.
func (vs *values) of(o nft.Object, keys []nft.Key) []string {
	var out []string
	for _, s := range vs.rendered {
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

// current identifies the current version of a user value (nil when it is gone): the endpoint
// in endpoints (the model's), or the failsafe entry (the configuration does not change while
// felix runs).
func (vs *values) current(endpoints map[calc.WorkloadEndpointID]*calc.WorkloadEndpoint, key string) any {
	if id, ok := vs.endpoints[key]; ok {
		if ep := endpoints[id]; ep != nil {
			return ep
		}
		return nil
	}
	if _, ok := vs.failsafes[key]; ok {
		return key
	}
	return nil
}

// endpoint is the spoofing endpoint a user value belongs to, if it is one.
func (vs *values) endpoint(key string) (calc.WorkloadEndpointID, bool) {
	id, ok := vs.endpoints[key]
	return id, ok
}
