package topo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Binaries is a directory of built programs.
type Binaries struct {
	Dir string
	// Felix says whether calico-felix was built with its kernel dataplane (-tags
	// felixdataplane); without it felix exits when it would program the kernel.
	Felix bool
}

// Build compiles the calico binaries and devetcd into dir. calico-felix is built with the
// kernel dataplane when that compiles.
func Build(ctx context.Context, repo, dir string) (Binaries, error) {
	b := Binaries{Dir: dir}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return b, err
	}
	if err := goBuild(ctx, repo, dir, "", "./cmd/calico", "./cmd/calico-ipam", "./cmd/calico-startup",
		"./cmd/calico-confd", "./cmd/calicoctl", "./test/devetcd"); err != nil {
		return b, err
	}
	if err := goBuild(ctx, repo, dir, "felixdataplane", "./cmd/calico-felix"); err == nil {
		b.Felix = true
	} else if err := goBuild(ctx, repo, dir, "", "./cmd/calico-felix"); err != nil {
		return b, err
	}
	return b, nil
}

func goBuild(ctx context.Context, repo, dir, tags string, pkgs ...string) error {
	args := []string{"build", "-o", dir + "/"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkgs...)...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w: %s", strings.Join(pkgs, " "), err, out)
	}
	return nil
}

// FelixHasDataplane runs "calico-felix --version"-independent detection on a prebuilt binary:
// it looks for the marker string of the build without the dataplane.
func FelixHasDataplane(bin string) bool {
	data, err := os.ReadFile(filepath.Join(bin, "calico-felix"))
	if err != nil {
		return false
	}
	return !strings.Contains(string(data), "built without the kernel dataplane")
}

// RepoRoot finds the directory holding go.mod, from the working directory upwards.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// splitFields splits an ip command line on blanks.
func splitFields(s string) []string { return strings.Fields(s) }
