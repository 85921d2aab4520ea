//go:build !felixdataplane

package main

import (
	"errors"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

// newDataplane: this build has no kernel dataplane (pkg/felix/dataplane.New did not exist when
// calico-felix was wired). Build with -tags felixdataplane once it does; see dataplane_real.go.
// Felix then exits with an error when it would start programming the kernel: it never runs
// without enforcing policy.
func newDataplane(dataplane.Config, zerolog.Logger) (felix.Dataplane, error) {
	return nil, errors.New("this calico-felix was built without the kernel dataplane (build with -tags felixdataplane)")
}
