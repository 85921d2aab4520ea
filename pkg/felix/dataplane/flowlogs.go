package dataplane

import (
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ruleset"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
)

// flowLogTables hands the flow collector the NFLOG prefix table of each ruleset applied.
type flowLogTables struct {
	publish func(*ruleid.Table) // nil: no collector
	last    *ruleid.Table
	refused int // verdict rules rendered without their log statement (metric)
}

// applied publishes the table of the ruleset the kernel just accepted when it changed.
func (f *flowLogTables) applied(b *ruleset.Builder) {
	t, refused := b.FlowLogTable()
	f.refused = refused
	if t == nil || t == f.last || f.publish == nil {
		return
	}
	f.last = t
	f.publish(t)
}
