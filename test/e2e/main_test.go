package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/dataplane/wireguard/wgtest"
	"github.com/calico-host/calico-host/pkg/netnstest"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

// bins are the programs under test, built once by TestMain (root only).
var bins topo.Binaries

func TestMain(m *testing.M) {
	wgtest.MaybeServe() // in a re-executed child: a userspace WireGuard device (wireguard_test.go)
	flag.Parse()
	os.Exit(func() int {
		if !netnstest.Privileged() || testing.Short() {
			return m.Run() // every test skips
		}
		topo.HandleSignals()
		if left := topo.SweepLeftovers("cce2e"); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "e2e: removed %d namespaces left by a killed run\n", len(left))
		}
		var err error
		if bins, err = binaries(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: building the binaries:", err)
			return 1
		}
		if os.Getenv("E2E_BIN") == "" {
			defer os.RemoveAll(bins.Dir)
			topo.AtExit(func() { os.RemoveAll(bins.Dir) })
		}
		defer topo.CloseAll()
		return m.Run()
	}())
}

func binaries() (topo.Binaries, error) {
	if dir := os.Getenv("E2E_BIN"); dir != "" {
		return topo.Binaries{Dir: dir}, nil
	}
	dir, err := os.MkdirTemp("", "calico-e2e-bin-")
	if err != nil {
		return topo.Binaries{}, err
	}
	repo, err := topo.RepoRoot()
	if err != nil {
		return topo.Binaries{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	b, err := topo.Build(ctx, repo, dir)
	if err == nil {
		fmt.Fprintf(os.Stderr, "e2e: built the binaries in %s\n", time.Since(start).Round(time.Second))
	}
	return b, err
}
