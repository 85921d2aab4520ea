package calicoctl

import (
	"fmt"
	"io"

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
