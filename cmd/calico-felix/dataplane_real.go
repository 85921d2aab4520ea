//go:build felixdataplane

package main

import (
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

// newDataplane builds the kernel dataplane.
func newDataplane(cfg dataplane.Config, log zerolog.Logger) (felix.Dataplane, error) {
	return dataplane.New(cfg, log)
}
