package dataplane

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ifaces"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ruleset"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/nft"
)

// Offline is what the dataplane would program from calc's updates, computed without a kernel:
// the nftables tables its ruleset builder renders, for a trace (package trace) to run packets
// through. The tables are built by the same model, host endpoint resolution and builder as a
// running dataplane's.
type Offline struct {
	// Tables are the tables `ip <TableName>` and, with IPv6 on, `ip6 <TableName>`.
	Tables []*nft.Table
	// RuleIDs maps the comments of the policy and profile rules that give a verdict back to
	// their rule identifiers (ruleset.Builder.StampRuleIDs).
	RuleIDs *ruleid.Table
	// Endpoints are the local workload endpoints the dataplane admitted, HostEndpoints the
	// host endpoints, by object name.
	Endpoints     map[calc.WorkloadEndpointID]*calc.WorkloadEndpoint
	HostEndpoints map[string]*calc.HostEndpoint
}

// BuildOffline renders the tables of cfg's host from calc's updates (every batch of a graph's
// Flush, in order). ifs are the host's interfaces as the interface monitor would report them
// (host endpoints resolve against them; nil: none).
func BuildOffline(cfg Config, updates []calc.Update, ifs []*ifaces.State, log zerolog.Logger) (*Offline, error) {
	rcfg, err := cfg.rulesConfig()
	if err != nil {
		return nil, fmt.Errorf("dataplane configuration: %w", err)
	}
	m := newModel()
	m.gates = newEndpointGates(cfg, log)
	for _, u := range updates {
		m.apply(u)
	}
	for _, st := range ifs {
		m.applyIface(ifaces.Update{Name: st.Name, State: st})
	}
	hosts, _ := resolveHostEndpoints(m, newIfaceMatcher(cfg))
	in := m.rulesetInput(hosts, rulesVXLAN(vxlanDevices(cfg, m)), ipipWanted(cfg, m))
	b := ruleset.New(rcfg, cfg.TableName, log, nil)
	ids := ruleid.NewTable()
	b.StampRuleIDs(ids)
	return &Offline{Tables: b.Build(in), RuleIDs: ids, Endpoints: m.weps, HostEndpoints: m.heps}, nil
}
