package startup

import (
	"sort"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/compat"
	"github.com/calico-host/calico-host/pkg/compat/report"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// settingsWatch follows the IP pools and this host's Node (the tunnel loop's syncer messages)
// and reports their settings that calico-host does not implement (see compat), each once.
type settingsWatch struct {
	reporter *report.Reporter
	byKey    map[string][]compat.Finding
}

func newSettingsWatch(r *report.Reporter) *settingsWatch {
	return &settingsWatch{reporter: r, byKey: map[string][]compat.Finding{}}
}

// apply folds a syncer message in and reports the current findings.
func (w *settingsWatch) apply(m syncer.Message) {
	if m.Snapshot {
		w.byKey = map[string][]compat.Finding{}
	}
	for _, u := range m.Updates {
		key := u.ID.Key()
		delete(w.byKey, key)
		if f := unimplemented(u.Value); len(f) > 0 {
			w.byKey[key] = f
		}
	}
	keys := make([]string, 0, len(w.byKey))
	for k := range w.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var all []compat.Finding
	for _, k := range keys {
		all = append(all, w.byKey[k]...)
	}
	w.reporter.Replace(all)
}

// unimplemented checks an IP pool or a Node (other values have none).
func unimplemented(v any) []compat.Finding {
	var f []compat.Finding
	switch o := v.(type) {
	case *api.IPPool:
		f, _ = compat.Check(compat.IPPool, "IPPool "+o.Name, o)
	case *api.Node:
		f, _ = compat.Check(compat.Node, "Node "+o.Name, o)
	}
	return f
}

// settingsPrefixes are what the tunnel loop watches (pools and this Node), reused here.
func settingsPrefixes(node string) []string {
	return []string{datastore.ResourcePrefix + "ippools/", datastore.ResourcePrefix + "nodes/" + node}
}
