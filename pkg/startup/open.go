package startup

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/config"
	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/ipam"
)

// Open builds the component with its production dependencies: an etcd client, netlink in the
// current network namespace, IPAM and the systemd notifier. close releases them.
func Open(cfg Config, ds config.Datastore, log zerolog.Logger) (s *Startup, closeFn func(), err error) {
	client, err := datastore.New(ds)
	if err != nil {
		return nil, nil, err
	}
	kernel, err := NewNetlinkKernel(log)
	if err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("opening the kernel interface: %w", err)
	}
	closeFn = func() {
		kernel.Close()
		client.Close()
	}
	s, err = New(cfg, Deps{Datastore: client, Kernel: kernel, IPAM: ipam.New(client, log.With().Str("subcomponent", "ipam").Logger()),
		Notifier: daemon.NewNotifier(log), Log: log})
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	return s, closeFn, nil
}
