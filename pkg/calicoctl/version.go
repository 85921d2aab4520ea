package calicoctl

import (
	"fmt"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/buildinfo"
	"github.com/calico-host/calico-host/pkg/datastore"
)

func init() {
	register(&command{name: "version", summary: "Display the version of this binary.", run: (*cli).runVersion})
}

const versionUsage = `Usage:
  calicoctl version [--config=<CONFIG>]

Options:
  -h --help                    Show this screen.
  -c --config=<CONFIG>         Path to the datastore configuration.

Description:
  Display the version of calicoctl, and the version and type of the cluster from
  ClusterInformation "default".
`

func (c *cli) runVersion(args []string) error {
	f := newFlags("version", versionUsage)
	var cfg, poll string
	f.common(&cfg)
	f.str(&poll, "", "poll")
	pos, err := f.parse(args, c.stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return failf("Invalid option: 'calicoctl version %s'. Use flag '--help' to read about a specific subcommand.", pos[0])
	}
	fmt.Fprintln(c.stdout, "Client Version:   ", buildinfo.Version)
	fmt.Fprintln(c.stdout, "Git commit:       ", buildinfo.GitCommit)
	s, err := c.connect(cfg)
	if err != nil {
		return err
	}
	defer s.close()
	ctx, cancel := s.op()
	defer cancel()
	ci, err := datastore.GetAs[*api.ClusterInformation](ctx, s.ds, "", "default")
	if err != nil {
		return failf("Unable to retrieve Cluster Version or Type: %v", calicoError(err, mustKind("ClusterInformation"), "", "default"))
	}
	fmt.Fprintln(c.stdout, "Cluster Version:  ", orDefault(ci.Spec.CalicoVersion, "unknown"))
	fmt.Fprintln(c.stdout, "Cluster Type:     ", orDefault(ci.Spec.ClusterType, "unknown"))
	return nil
}

func mustKind(name string) api.KindInfo {
	k, ok := api.LookupKind(name)
	if !ok {
		panic("calicoctl: unknown kind " + name)
	}
	return k
}
