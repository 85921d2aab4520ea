package dataplane

import (
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ruleset"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
)

// flowLogTables hands the flow collector the NFLOG prefix table of each ruleset applied.
type flowLogTables struct {
	publish func(*ruleid.Table, int) // nil: no collector
	last    *ruleid.Table
	refused int // verdict rules rendered without their log statement, as last published
}

// applied publishes the table of the ruleset the kernel just accepted, and the count of verdict
// rules rendered without their log statement, when either changed.
func (f *flowLogTables) applied(b *ruleset.Builder) {
	t, refused := b.FlowLogTable()
	if t == nil || f.publish == nil || t == f.last && refused == f.refused {
		return
	}
	f.last, f.refused = t, refused
	f.publish(t, refused)
}
