package calicoctl

import (
	"fmt"
	"io"
	"strings"

	"github.com/calico-host/calico-host/pkg/compat"
)

// warnNotImplemented prints a warning for each Project Calico setting of the documents that
// calico-host accepts but does not implement (compat's list). The documents are written as
// given: the warnings do not fail the command.
func warnNotImplemented(w io.Writer, docs []*document) {
	for _, d := range docs {
		findings, err := compat.Check(d.kind.Kind, d.kind.Kind+" "+d.meta().Name, d.res)
		if err != nil {
			fmt.Fprintf(w, "Warning: %v\n", err)
		}
		for _, f := range findings {
			fmt.Fprintf(w, "Warning: %s\n", f)
		}
	}
}

// warnStaged says, for each staged policy of the documents, that it is stored but not enforced,
// and where to see what it would do: calicoctl trace prints its pending verdicts (the trace runs
// felix's code with the staged policies enforced in their place, as Project Calico's felix
// evaluates them for flow logs), and felix's flow logs carry them in policies.pending. A
// StagedKubernetesNetworkPolicy becomes what Project Calico converts it to, which selects
// Kubernetes pods only: the warning says so.
func warnStaged(w io.Writer, docs []*document) {
	for _, d := range docs {
		if !strings.HasPrefix(d.kind.Kind, "Staged") {
			continue
		}
		m := d.meta()
		id := identifier(d.kind, m.Namespace, m.Name)
		fmt.Fprintf(w, "Warning: %s is stored but not enforced: staged policies only propose a change; "+
			"see what it would do with `calicoctl trace <SOURCE> <DESTINATION>` (its pending verdict), and in the "+
			"policies.pending of felix's flow logs when they are on\n", id)
		if d.kind.Kind == "StagedKubernetesNetworkPolicy" {
			fmt.Fprintf(w, "Warning: %s applies, as Project Calico converts it, to workload endpoints labelled "+
				"projectcalico.org/orchestrator == 'k8s' only\n", id)
		}
	}
}
