package calicoctl

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/calico-host/calico-host/internal/buildinfo"
	"github.com/calico-host/calico-host/pkg/calicoctl/diags"
)

func init() {
	registerSub("node", "Calico node management.", &command{name: "diags", summary: "Gather a diagnostics bundle for a Calico node.", run: (*cli).runNodeDiags})
}

const nodeDiagsUsage = `Usage:
  calicoctl node diags [--log-dir=<LOG_DIR>] [--output-dir=<DIR>] [--config=<CONFIG>]

Options:
  -h --help                 Show this screen.
     --log-dir=<LOG_DIR>    The directory of log files to include, if it exists
                            [default: /var/log/calico]. calico-host logs to the journal,
                            which is always included.
     --output-dir=<DIR>     Where to write the bundle (default: a new directory in /tmp).
  -c --config=<CONFIG>      Path to the datastore configuration.

Description:
  Collects, into one gzipped tarball, what helps to diagnose this calico-host node: versions,
  the status and journal of calico-startup, calico-confd, calico-felix and calico-bird, the
  nftables ruleset, routes, rules, neighbours, links and addresses, BIRD's configuration and
  status (through its control socket), felix's metrics and health, the configuration files,
  and this host's Node and endpoints from etcd. Every collector is bounded in time; one that
  fails leaves its error in the bundle and the others go on. Secrets (passwords, private
  keys, tokens, etcd credentials, values of keys named like key, password, secret or token)
  are replaced by REDACTED in every file. The bundle's path is printed at the end.
`

func (c *cli) runNodeDiags(args []string) error {
	f := newFlags("node diags", nodeDiagsUsage)
	var cfg, logDir, outDir string
	f.common(&cfg)
	f.str(&logDir, "/var/log/calico", "log-dir")
	f.str(&outDir, "", "output-dir")
	pos, err := c.parseFlags(f, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return failf("Invalid option: 'calicoctl node diags %s'. Use flag '--help' to read about a specific subcommand.", strings.Join(pos, " "))
	}
	if os.Geteuid() != 0 {
		return failf("This command must be run as root.")
	}
	h := c.diagsHost(cfg, logDir)
	if h.Datastore != nil {
		defer h.Datastore.Close()
	}
	return c.writeDiags(h, outDir)
}

// writeDiags collects the bundle into outDir (a new temporary directory when empty).
func (c *cli) writeDiags(h *diags.Host, outDir string) error {
	fmt.Fprintln(c.stdout, "Collecting diagnostics")
	if outDir == "" {
		dir, err := os.MkdirTemp("", "calico")
		if err != nil {
			return fmt.Errorf("error creating temp directory to dump logs: %w", err)
		}
		outDir = dir
		fmt.Fprintln(c.stdout, "Using temp dir:", outDir)
	}
	p := c.newProgress("Collecting diagnostics")
	res, err := diags.Run(c.ctx, h, outDir, p.update)
	p.finish()
	if err != nil {
		return err
	}
	if len(res.Failed) > 0 {
		fmt.Fprintf(c.stdout, "Some diagnostics could not be collected (their errors are in the bundle): %s\n", strings.Join(res.Failed, ", "))
	}
	fmt.Fprintf(c.stdout, "\nDiags saved to %s\n", res.Path)
	fmt.Fprintln(c.stdout, "If required, you can upload the diagnostics bundle to a file sharing service.")
	return nil
}

// diagsHost describes this host to the collectors. A datastore that cannot be configured is
// noted in the bundle; the rest is still collected.
func (c *cli) diagsHost(cfg, logDir string) *diags.Host {
	h := &diags.Host{Root: "/", BIRDSockets: birdSockets, LogDir: logDir,
		Versions: fmt.Sprintf("calicoctl (calico-host) %s, git commit %s", buildinfo.Version, buildinfo.GitCommit)}
	if s, ok := c.env("CALICOCTL_BIRD_SOCKET"); ok && s != "" {
		h.BIRDSockets = []string{s}
	}
	h.NodeName = localNodeName(c.env, "/")
	s, err := c.connect(cfg)
	if err != nil {
		h.DatastoreErr = err
		return h
	}
	// One bounded probe: an unreachable etcd must not use up each collector's time.
	ctx, cancel := context.WithTimeout(c.ctx, datastoreProbeTimeout)
	defer cancel()
	if err := s.ds.Ping(ctx); err != nil {
		h.DatastoreErr = fmt.Errorf("etcd does not answer: %w", err)
		s.close()
		return h
	}
	h.Datastore = s.ds
	return h
}

// datastoreProbeTimeout bounds the check that etcd answers before collecting.
const datastoreProbeTimeout = 5 * time.Second

// localNodeName is this host's Node name as calico-host's daemons find it: $NODENAME,
// $CALICO_NODENAME, the first line of /var/lib/calico/nodename (written by calico-startup),
// else the hostname in lower case.
func localNodeName(env func(string) (string, bool), root string) string {
	for _, name := range []string{"NODENAME", "CALICO_NODENAME"} {
		if v, ok := env(name); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	if data, err := os.ReadFile(strings.TrimSuffix(root, "/") + "/var/lib/calico/nodename"); err == nil {
		line, _, _ := bufio.NewReader(bytes.NewReader(data)).ReadLine()
		if name := strings.TrimSpace(string(line)); name != "" {
			return name
		}
	}
	host, err := os.Hostname()
	if err != nil {
		return ""
	}
	return strings.ToLower(host)
}
