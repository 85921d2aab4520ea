package ruleset

import (
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
)

// What the dataplane's quarantine asks of the builder: names for the objects the kernel
// refused (Describe), and, for a refused static chain, the user values it holds (ValuesOf; see
// values.go), which the builder leaves out while the quarantine withholds them. When a value is
// quarantined or released, the quarantine says so (Invalidate) and the next build renders
// what that changes.

// Describe names the source of a chain or set of the tables: its metric label (policy,
// profile, endpoint, set) and a description naming the objects (kind/name). The label is empty
// for what may not be quarantined (the static chains, maps, internal sets).
func (b *Builder) Describe(kind nft.ObjectKind, name string) (label, what string) {
	switch kind {
	case nft.ObjectSet:
		return b.sets.describeSet(name)
	case nft.ObjectChain:
		if label, what = b.groups.describeChain(name); label != "" {
			return label, what
		}
		return b.workloads.describeChain(name)
	}
	return "", ""
}

// DescribeValue is the metric label (endpoint, failsafe) and description of a user value of
// the static chains.
func (b *Builder) DescribeValue(key string) (label, what string) { return b.values.describe(key) }

// ValuesOf lists the user values of static chain o that hold one of keys (all of them when
// keys is empty): what to quarantine when the kernel refuses o.
func (b *Builder) ValuesOf(o nft.Object, keys []nft.Key) []string { return b.values.of(o, keys) }

// ValueCurrent identifies the current version of a user value (nil when it is gone): its
// endpoint in endpoints (the model's), or the failsafe entry.
func (b *Builder) ValueCurrent(endpoints map[calc.WorkloadEndpointID]*calc.WorkloadEndpoint, key string) any {
	return b.values.current(endpoints, key)
}

// Invalidate makes the next build render again what a user value's quarantine, or its
// release, changes: the static chains and the endpoint's dispatch verdicts.
func (b *Builder) Invalidate(key string) {
	b.static.markStale()
	if id, ok := b.values.endpoint(key); ok {
		b.workloads.markStale(id)
	}
}
