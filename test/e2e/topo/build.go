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
}

// Build compiles the calico binaries and devetcd into dir.
func Build(ctx context.Context, repo, dir string) (Binaries, error) {
	b := Binaries{Dir: dir}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return b, err
	}
	err := goBuild(ctx, repo, dir, "./cmd/calico", "./cmd/calico-ipam", "./cmd/calico-startup",
		"./cmd/calico-confd", "./cmd/calico-felix", "./cmd/calicoctl", "./test/devetcd")
	return b, err
}

func goBuild(ctx context.Context, repo, dir string, pkgs ...string) error {
	args := []string{"build", "-o", dir + "/"}
	cmd := exec.CommandContext(ctx, "go", append(args, pkgs...)...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w: %s", strings.Join(pkgs, " "), err, out)
	}
	return nil
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
