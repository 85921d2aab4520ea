package main

import (
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

// newDataplane builds the kernel dataplane: nftables through netlink. The routes, interface and
// VXLAN pieces (dataplane.WithRoutes, WithInterfaces, WithVXLAN) are not passed yet: their
// packages are not finished, and the dataplane logs that it skips their work.
func newDataplane(cfg dataplane.Config, log zerolog.Logger) (felix.Dataplane, error) {
	return dataplane.New(cfg, log)
}
