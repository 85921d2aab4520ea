package main

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

// newDataplane returns the builder of the kernel dataplane, which opens its own kernel pieces in
// cfg.NetNS ("" = felix's own namespace). The dataplane loop reports progress at least every
// idleBeat.
func newDataplane(idleBeat time.Duration) felix.NewDataplane {
	return func(cfg dataplane.Config, log zerolog.Logger) (felix.Dataplane, error) {
		dp, err := dataplane.New(cfg, log, dataplane.WithTiming(dataplane.Timing{IdleBeat: idleBeat}))
		if err != nil {
			return nil, err
		}
		return dp, nil
	}
}
