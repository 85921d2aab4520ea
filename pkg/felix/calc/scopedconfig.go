package calc

import (
	"fmt"
	"strings"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/selector"
)

// scopedConfig is a selector-scoped FelixConfiguration: one named neither "default" nor
// "node.<name>" with a nodeSelector. It applies to the nodes whose labels match, between default
// and node.<name> in precedence (Project Calico's DatastorePerSelector source).
type scopedConfig struct {
	name    string
	sel     *selector.Selector
	created time.Time // metadata.creationTimestamp (zero when absent or unparsable)
	spec    *api.FelixConfigurationSpec
}

// isScopedName reports whether a FelixConfiguration name is neither default nor per node.
func isScopedName(name string) bool {
	return name != "default" && !strings.HasPrefix(name, "node.")
}

// newScopedConfig parses a selector-scoped FelixConfiguration. It returns nil (and no error)
// for one without a nodeSelector, which applies nowhere, and an error for an invalid selector
// (the caller ignores the object, as Project Calico's felix does).
func newScopedConfig(name string, fc *api.FelixConfiguration) (*scopedConfig, error) {
	if fc.Spec.NodeSelector == nil || strings.TrimSpace(*fc.Spec.NodeSelector) == "" {
		return nil, nil
	}
	sel, err := selector.Parse(*fc.Spec.NodeSelector)
	if err != nil {
		return nil, fmt.Errorf("FelixConfiguration %q: ignored: invalid nodeSelector %q: %w", name, *fc.Spec.NodeSelector, err)
	}
	created, _ := time.Parse(time.RFC3339Nano, fc.CreationTimestamp)
	return &scopedConfig{name: name, sel: sel, created: created, spec: &fc.Spec}, nil
}

// older orders scoped configurations: the oldest creation time first, then by name.
func (s *scopedConfig) older(o *scopedConfig) bool {
	if !s.created.Equal(o.created) {
		return s.created.Before(o.created)
	}
	return s.name < o.name
}

// matchScoped returns the selector-scoped configuration that applies to a node with labels
// (nil when none matches): when several match, the oldest wins, so a newly created conflicting
// one does not change a working configuration. matched counts the matches. As in Project
// Calico, none applies without a Node or to a Node without labels (not even all()).
func matchScoped(configs map[string]*scopedConfig, node *nodeInfo) (winner *scopedConfig, matched int) {
	if node == nil || node.labels == nil {
		return nil, 0
	}
	for _, c := range configs {
		if !c.sel.EvaluateMap(node.labels) {
			continue
		}
		matched++
		if winner == nil || c.older(winner) {
			winner = c
		}
	}
	return winner, matched
}
