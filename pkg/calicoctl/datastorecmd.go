package calicoctl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

const (
	datastoreSummary = "Calico datastore management."
	migrateSummary   = "Migrate the contents of an etcdv3 datastore to a Kubernetes datastore."
)

func init() {
	registerSub("datastore", datastoreSummary, refusedCommand("datastore migrate-policy-names",
		"Rewrite pre-v3.32 policy names (refused by calico-host).",
		"calico-host's calicoctl does not rewrite policy names; run Project Calico's calicoctl of the matching version"))
	registerSub("datastore migrate", migrateSummary, &command{name: "lock",
		summary: "Lock the datastore (ClusterInformation datastoreReady false).",
		run:     func(c *cli, args []string) error { return c.runLock(args, true) }})
	registerSub("datastore migrate", migrateSummary, &command{name: "unlock",
		summary: "Unlock the datastore (ClusterInformation datastoreReady true).",
		run:     func(c *cli, args []string) error { return c.runLock(args, false) }})
	registerSub("datastore migrate", migrateSummary, refusedCommand("datastore migrate export",
		"Export the etcdv3 datastore for Kubernetes (refused by calico-host).", kubernetesOnly))
	registerSub("datastore migrate", migrateSummary, &command{name: "import",
		summary: "Import into a Kubernetes datastore (refused by calico-host).", refused: kubernetesOnly, run: runImport})
}

// runImport refuses as Project Calico's calicoctl does against an etcd datastore, which is the
// only kind calico-host has: it imports into Kubernetes only.
func runImport(c *cli, args []string) error {
	f := newFlags("datastore migrate import", "Usage:\n  calicoctl datastore migrate import --filename=<FILENAME> [--config=<CONFIG>]\n\n"+
		"Not supported by calico-host: "+kubernetesOnly+".\n")
	var cfg, file string
	f.common(&cfg)
	f.str(&file, "", "f", "filename")
	if _, err := c.parseFlags(f, args); err != nil {
		return err
	}
	return errors.New("invalid datastore type: etcdv3 to import to for datastore migration. Datastore type must be kubernetes")
}

const kubernetesOnly = "calico-host keeps its state in etcd only; migrating to a Kubernetes datastore is done with Project Calico's calicoctl"

func lockUsage(lock bool) string {
	verb, state := "lock", "false"
	if !lock {
		verb, state = "unlock", "true"
	}
	return fmt.Sprintf(`Usage:
  calicoctl datastore migrate %[1]s [--config=<CONFIG>]

Options:
  -h --help                Show this screen.
  -c --config=<CONFIG>     Path to the datastore configuration.

Description:
  Sets datastoreReady to %[2]s in ClusterInformation "default", as Project Calico does.
  While the datastore is locked the CNI plugin refuses new workloads and felix does not
  start programming; 'calicoctl ipam split' requires it.
`, verb, state)
}

// runLock is `datastore migrate lock` and `unlock`: it sets ClusterInformation datastoreReady
// (creating ClusterInformation first if needed, as Project Calico's lock does).
func (c *cli) runLock(args []string, lock bool) error {
	verb := map[bool]string{true: "lock", false: "unlock"}[lock]
	f := newFlags("datastore migrate "+verb, lockUsage(lock))
	var cfg string
	f.common(&cfg)
	pos, err := c.parseFlags(f, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return failf("Invalid option: 'calicoctl datastore migrate %s %s'. Use flag '--help' to read about a specific subcommand.", verb, strings.Join(pos, " "))
	}
	s, err := c.connect(cfg)
	if err != nil {
		return err
	}
	defer s.close()
	if lock {
		if err := s.ensureClusterInformation(); err != nil {
			return fmt.Errorf("unable to initialize cluster information for the datastore migration: %w", err)
		}
	}
	if err := s.setDatastoreReady(!lock, verb+"ing"); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "Datastore %sed.\n", verb)
	return nil
}

// setDatastoreReady writes ClusterInformation "default" with datastoreReady set to ready,
// retrying on a concurrent update.
func (s *session) setDatastoreReady(ready bool, doing string) error {
	for attempt := 1; ; attempt++ {
		ctx, cancel := s.op()
		ci, err := datastore.GetAs[*api.ClusterInformation](ctx, s.ds, "", "default")
		cancel()
		if err != nil {
			return fmt.Errorf("error retrieving ClusterInformation for %s: %w", doing, err)
		}
		ci.Spec.DatastoreReady = api.Bool(ready)
		err = s.write(ci)
		if err == nil {
			return nil
		}
		if !datastore.IsConflict(err) || attempt == maxUpdateAttempts {
			return fmt.Errorf("error updating ClusterInformation for %s: %w", doing, err)
		}
		if err := s.backoff(attempt); err != nil {
			return err
		}
	}
}
