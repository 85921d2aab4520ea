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

// warnStaged says, for each staged policy of the documents, that it is stored but not enforced:
// Project Calico's felix only reports what a staged policy would do, and calico-host's felix
// ignores staged policies altogether.
func warnStaged(w io.Writer, docs []*document) {
	for _, d := range docs {
		if strings.HasPrefix(d.kind.Kind, "Staged") {
			m := d.meta()
			fmt.Fprintf(w, "Warning: %s is stored but not enforced: staged policies only propose a change, and calico-host's felix does not act on them\n",
				identifier(d.kind, m.Namespace, m.Name))
		}
	}
}
