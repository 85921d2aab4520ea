package cni

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
)

// DefaultEndpointStatusDir is where felix writes a file per local workload endpoint whose
// policy is programmed (its EndpointStatusPathPrefix, /var/run/calico, + "endpoint-status").
const DefaultEndpointStatusDir FilePath = "/var/run/calico/endpoint-status"

// statusPollInterval is how often the wait for felix's endpoint status file looks for it.
const statusPollInterval = 100 * time.Millisecond

// EndpointStatusFileName is the name of the status file felix writes for a workload endpoint:
// its orchestrator, workload ("<namespace>/<workload>") and endpoint IDs, each path-escaped,
// joined by spaces (Project Calico's WorkloadEndpointKeyToStatusFilename).
func EndpointStatusFileName(namespace, wepName string) (string, error) {
	_, orch, workload, endpoint, err := api.SplitWorkloadEndpointName(wepName)
	if err != nil {
		return "", fmt.Errorf("naming the endpoint status file of %s: %w", wepName, err)
	}
	return url.PathEscape(orch) + " " + url.PathEscape(api.WorkloadID(namespace, workload)) + " " + url.PathEscape(endpoint), nil
}

// waitForPolicy waits, when policy_setup_timeout_seconds is set, until felix has written the
// endpoint's status file (its policy is programmed), as Project Calico's plugin does before ADD
// returns. Running out of time is logged and the ADD goes on, as there.
func (s *session) waitForPolicy() {
	timeout := time.Duration(s.conf.PolicySetupTimeoutSeconds) * time.Second
	if timeout <= 0 {
		return
	}
	dir, err := pathOr("endpoint_status_dir", s.conf.EndpointStatusDir, DefaultEndpointStatusDir)
	if err == nil {
		var name string
		if name, err = EndpointStatusFileName(s.w.Namespace, s.w.Name); err == nil {
			start := time.Now()
			err = waitForFile(s.ctx, filepath.Join(string(dir), name), timeout)
			s.log.Debug().Dur("waited", time.Since(start)).Str("file", name).Msg("felix programmed the endpoint's policy")
		}
	}
	if err != nil {
		s.log.Warn().Err(err).Dur("timeout", timeout).Msg("error waiting for felix to program the endpoint's policy; going on")
	}
}

// waitForFile polls for path until it exists, ctx is done or timeout passes.
func waitForFile(ctx context.Context, path string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(statusPollInterval)
	defer tick.Stop()
	for {
		_, err := os.Stat(path)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("checking for %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no endpoint status file %s: %w", path, ctx.Err())
		case <-tick.C:
		}
	}
}
