package ruleset

import (
	"iter"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/nft"
)

// Builder turns the dataplane's model into the desired nftables tables: `ip <name>` and, with
// IPv6 on, `ip6 <name>`, which one Applier writes in one transaction. It keeps them and updates
// them in place, so that a batch which changes one endpoint costs its chains and map elements,
// not a rebuild of thousands of objects (the tables record what changed; the Applier plans only
// that). Each part of the tables has one owner (see the package doc).
type Builder struct {
	tables    tables
	workloads *workloads
	groups    *groups
	sets      *calcSets
	static    *static
	values    *values
	attr      *attribution
}

// Input is what a build renders: the model's values (calc's, by ID: the builder reads them and
// keeps pointers to those it rendered; it never modifies or copies them), what the dataplane
// resolved for the static chains, and what changed since the last build.
type Input struct {
	Policies     map[calc.PolicyID]*calc.Policy
	Profiles     map[string]*calc.Profile
	Endpoints    map[calc.WorkloadEndpointID]*calc.WorkloadEndpoint
	IPSets       map[string]*IPSet
	Pools        map[string]*calc.IPPool
	Hosts        map[string]*calc.HostMetadata
	VTEPs        iter.Seq[*calc.VTEP]
	ServiceCIDRs []string // the service CIDRs of BGPConfiguration default, as written

	HostEndpoints []rules.HostIface   // host endpoints resolved to this host's interfaces
	VXLAN         []rules.VXLANDevice // the VXLAN devices this host has
	IPIP          bool                // this host has tunl0

	Changed Changes
}

// Changes says what changed in the model since the last build.
type Changes struct {
	Endpoints map[calc.WorkloadEndpointID]bool // workload endpoints updated or removed
	Policies  map[calc.PolicyID]bool           // policies updated or removed
	Rules     bool                             // a policy or profile was updated or removed
	// Volatile: something the static and host endpoint chains or the internal sets depend on
	// changed (host endpoints, interfaces, pools, VTEPs, host configuration, an endpoint's
	// floating IPs or spoofing exceptions).
	Volatile bool
}

// New returns a Builder of the tables `ip <table>` and, with IPv6 on, `ip6 <table>`. withheld
// tells it which user values of the static chains are quarantined (nil: none).
func New(cfg *rules.Config, table string, log zerolog.Logger, withheld func(key string) bool) *Builder {
	t := newTables(cfg, table)
	b := &Builder{tables: t, values: newValues(withheld)}
	b.sets = newCalcSets(cfg, t, log)
	b.attr = newAttribution(cfg.FlowLogs, log)
	b.groups = newGroups(cfg, t, log, b.sets, b.attr)
	b.workloads = newWorkloads(cfg, t, b.groups, b.values)
	b.static = newStatic(cfg, t, log, b.groups, b.sets, b.values)
	return b
}

// Tables are the desired tables, as the last build left them.
func (b *Builder) Tables() []*nft.Table { return b.tables }

// Build brings the desired tables up to date with in and returns them.
func (b *Builder) Build(in *Input) []*nft.Table {
	if b.groups.regroup(in) { // the grouping of every endpoint's tiers may change
		b.workloads.markAllStale()
		b.static.markStale()
	}
	b.groups.markChanged(in)
	b.workloads.sync(in, b.groups.grouper(in))
	b.groups.refreshProfiles(in)
	b.static.sync(in)
	b.groups.renderUsers(b.sets.noteFilled(in))
	b.groups.finish(in)
	b.sets.sync(in)
	b.sets.addMissing()
	return b.tables
}

// FlowLogTable is the NFLOG prefix table of the tables as the last build left them, to hand to
// the flow collector with them (nil with flow logs off); refused counts their verdict rules
// rendered without their log statement (unnameable or clashing).
func (b *Builder) FlowLogTable() (t *ruleid.Table, refused int) {
	return b.attr.Table(), b.attr.refused
}

// Counts sums the objects of the tables: chains, and sets plus maps.
func (b *Builder) Counts() (chains, sets int) {
	for _, t := range b.tables {
		c, _, s, _, mp, _ := t.Counts()
		chains, sets = chains+c, sets+s+mp
	}
	return chains, sets
}

// tables are the desired tables, one per version of the configuration's families, in that
// order. Every part of the builder writes the objects it owns into them.
type tables []*nft.Table

func newTables(cfg *rules.Config, name string) tables {
	var out tables
	for _, v := range cfg.Families() {
		t := nft.NewTable(rules.TableFamily(v), name)
		from, to := rules.WorkloadDispatchMaps()
		must(t.PutMap(from))
		must(t.PutMap(to))
		out = append(out, t)
	}
	return out
}

// putChain puts c into every table (the chain is the same in the tables of both versions).
func (ts tables) putChain(c *nft.Chain) {
	for _, t := range ts {
		must(t.PutChain(c))
	}
}

// deleteChain deletes chain name from every table.
func (ts tables) deleteChain(name string) {
	for _, t := range ts {
		t.DeleteChain(name)
	}
}

// must panics on an error that only a bug in the renderers can cause: a name or declaration
// the table refuses.
func must(err error) {
	if err != nil {
		panic(err)
	}
}
