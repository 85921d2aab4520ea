package calicoctl

import (
	"fmt"
	"time"

	"github.com/calico-host/calico-host/internal/buildinfo"
	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

func init() {
	register(&command{name: "version", summary: "Display the version of this binary.", run: (*cli).runVersion})
}

const versionUsage = `Usage:
  calicoctl version [--config=<CONFIG>] [--poll=<POLL>] [--client]

Options:
  -h --help                    Show this screen.
  -c --config=<CONFIG>         Path to the datastore configuration.
     --poll=<POLL>             Poll for changes to the cluster information at a frequency specified
                               using POLL duration (e.g. 1s, 10m, 2h etc.). A value of 0 (the
                               default) disables polling.
     --client                  Display the client version only.

Description:
  Display the version of calicoctl, and the version and type of the cluster from
  ClusterInformation "default".
`

func (c *cli) runVersion(args []string) error {
	f := newFlags("version", versionUsage)
	var cfg, poll string
	var clientOnly bool
	f.common(&cfg)
	f.str(&poll, "", "poll")
	f.boolean(&clientOnly, "client")
	pos, err := c.parseFlags(f, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return failf("Invalid option: 'calicoctl version %s'. Use flag '--help' to read about a specific subcommand.", pos[0])
	}
	var every time.Duration
	if poll != "" {
		if every, err = time.ParseDuration(poll); err != nil {
			return failf("Invalid poll duration specified: %s", poll)
		}
	}
	fmt.Fprintln(c.stdout, "Client Version:   ", buildinfo.Version)
	fmt.Fprintln(c.stdout, "Git commit:       ", buildinfo.GitCommit)
	if clientOnly {
		return nil
	}
	s, err := c.connect(cfg)
	if err != nil {
		return err
	}
	defer s.close()
	return s.clusterVersion(every)
}

// clusterVersion prints the cluster's version and type; with a poll interval it keeps watching
// and prints them again when they change (errors go to stderr meanwhile), as Project Calico does.
func (s *session) clusterVersion(every time.Duration) error {
	var shownVersion, shownType string
	for {
		ctx, cancel := s.op()
		ci, err := datastore.GetAs[*api.ClusterInformation](ctx, s.ds, "", "default")
		cancel()
		if err == nil {
			if v := orDefault(ci.Spec.CalicoVersion, "unknown"); v != shownVersion {
				fmt.Fprintln(s.stdout, "Cluster Version:  ", v)
				shownVersion = v
			}
			if t := orDefault(ci.Spec.ClusterType, "unknown"); t != shownType {
				fmt.Fprintln(s.stdout, "Cluster Type:     ", t)
				shownType = t
			}
		} else {
			err = failf("Unable to retrieve Cluster Version or Type: %v", calicoError(err, mustKind("ClusterInformation"), "", "default"))
			shownVersion, shownType = "", ""
		}
		if every == 0 {
			return err
		}
		if err != nil {
			fmt.Fprintln(s.stderr, err)
		}
		select {
		case <-s.ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

func mustKind(name string) api.KindInfo {
	k, ok := api.LookupKind(name)
	if !ok {
		panic("calicoctl: unknown kind " + name)
	}
	return k
}
