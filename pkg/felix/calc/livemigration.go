package calc

import (
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
)

// migrationOwner identifies what a LiveMigration names: a workload endpoint, or every endpoint
// of a workload when endpoint is "" (the KubeVirt source form). As in Project Calico's
// calculator, the hostname does not count for orchestrator k8s.
type migrationOwner struct {
	host, orch, workload, endpoint string
}

func newMigrationOwner(host, orch, workload, endpoint string) migrationOwner {
	if orch == "k8s" {
		host = ""
	}
	return migrationOwner{host: host, orch: orch, workload: workload, endpoint: endpoint}
}

// side is a LiveMigration's source or target.
type side int

const (
	sideSource side = iota
	sideTarget
)

// migrationRefs is what one LiveMigration names (zero owners: none).
type migrationRefs struct {
	owners [2]migrationOwner
}

// migrationCalc follows LiveMigration objects and gives each local workload endpoint its role:
// target if any LiveMigration names it (or its workload) as target, else source if any names it
// as source. Several objects may name the same endpoint transiently, so references are counted
// per object key. Target selectors (KubeVirt) are accepted but not acted on: reported once.
type migrationCalc struct {
	log          zerolog.Logger
	byKey        map[string]migrationRefs
	refs         [2]map[migrationOwner]map[string]struct{}
	selectorSeen bool
}

func newMigrationCalc(log zerolog.Logger) *migrationCalc {
	return &migrationCalc{log: log, byKey: map[string]migrationRefs{},
		refs: [2]map[migrationOwner]map[string]struct{}{{}, {}}}
}

// update records the LiveMigration stored under key (nil: deleted) and returns the owners whose
// roles may have changed.
func (c *migrationCalc) update(key string, lm *api.LiveMigration) []migrationOwner {
	old := c.byKey[key]
	var cur migrationRefs
	if lm != nil {
		cur = c.refsOf(key, &lm.Spec)
		c.byKey[key] = cur
	} else {
		delete(c.byKey, key)
	}
	var changed []migrationOwner
	for s := range old.owners {
		if old.owners[s] == cur.owners[s] {
			continue
		}
		if old.owners[s] != (migrationOwner{}) {
			c.unref(side(s), old.owners[s], key)
			changed = append(changed, old.owners[s])
		}
		if cur.owners[s] != (migrationOwner{}) {
			c.ref(side(s), cur.owners[s], key)
			changed = append(changed, cur.owners[s])
		}
	}
	return changed
}

func (c *migrationCalc) refsOf(key string, s *api.LiveMigrationSpec) migrationRefs {
	var r migrationRefs
	if src := s.Source; src != nil {
		switch {
		case src.WorkloadEndpoint != nil:
			w := src.WorkloadEndpoint
			r.owners[sideSource] = newMigrationOwner(w.Hostname, w.OrchestratorID, w.WorkloadID, w.EndpointID)
		case src.Workload != nil:
			w := src.Workload
			r.owners[sideSource] = newMigrationOwner(w.Hostname, w.OrchestratorID, w.WorkloadID, "")
		}
	}
	if tgt := s.Target; tgt != nil {
		if w := tgt.WorkloadEndpoint; w != nil {
			r.owners[sideTarget] = newMigrationOwner(w.Hostname, w.OrchestratorID, w.WorkloadID, w.EndpointID)
		} else if tgt.Selector != nil && !c.selectorSeen {
			c.selectorSeen = true
			c.log.Warn().Str("key", key).Msg("LiveMigration target selectors (KubeVirt) and the IPAM owner-attribute " +
				"swap are not implemented: endpoints matched by a selector keep their normal routes (reported once)")
		}
	}
	return r
}

func (c *migrationCalc) ref(s side, o migrationOwner, key string) {
	keys := c.refs[s][o]
	if keys == nil {
		keys = map[string]struct{}{}
		c.refs[s][o] = keys
	}
	keys[key] = struct{}{}
}

func (c *migrationCalc) unref(s side, o migrationOwner, key string) {
	delete(c.refs[s][o], key)
	if len(c.refs[s][o]) == 0 {
		delete(c.refs[s], o)
	}
}

// role is the role of this host's endpoint id.
func (c *migrationCalc) role(host string, id WorkloadEndpointID) MigrationRole {
	o := newMigrationOwner(host, id.OrchestratorID, id.WorkloadID, id.EndpointID)
	whole := o
	whole.endpoint = ""
	switch {
	case len(c.refs[sideTarget][o]) > 0 || len(c.refs[sideTarget][whole]) > 0:
		return MigrationTarget
	case len(c.refs[sideSource][o]) > 0 || len(c.refs[sideSource][whole]) > 0:
		return MigrationSource
	}
	return MigrationNone
}

// names says whether owner o designates this host's endpoint id.
func (o migrationOwner) names(host string, id WorkloadEndpointID) bool {
	e := newMigrationOwner(host, id.OrchestratorID, id.WorkloadID, id.EndpointID)
	if o.endpoint == "" {
		e.endpoint = ""
	}
	return o == e
}
