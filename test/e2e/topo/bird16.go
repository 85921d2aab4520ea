package topo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// BIRD 1.6 is what Project Calico's calico-node runs (its own build of the 1.6 series). Debian 12
// ships it as package "bird" (1.6.8), which conflicts with bird2 and so cannot be installed
// beside it; the harness runs it from the package's files extracted into a private directory.

// bird16Cache is where the extracted package is kept between runs (like the packaging test's
// debootstrap root, outside the clone).
const bird16Cache = "/var/cache/calico-host/bird-1.6"

var bird16 struct {
	sync.Mutex
	dir string
}

// Bird16Dir returns a directory holding BIRD 1.6's bird, bird6 and birdc: $E2E_BIRD16 when
// set, else the cached extraction, fetched on first use with `apt-get download bird` (after
// `apt-get update` if the package lists lack it) and `dpkg-deb -x`.
func Bird16Dir(ctx context.Context) (string, error) {
	bird16.Lock()
	defer bird16.Unlock()
	if bird16.dir != "" {
		return bird16.dir, nil
	}
	dir := os.Getenv("E2E_BIRD16")
	if dir == "" {
		dir = filepath.Join(bird16Cache, "usr/sbin")
		if _, err := os.Stat(filepath.Join(dir, "bird6")); err != nil {
			if err := fetchBird16(ctx); err != nil {
				return "", fmt.Errorf("getting BIRD 1.6 (Debian package bird) into %s: %w", bird16Cache, err)
			}
		}
	}
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "bird"), "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "BIRD version 1.6") {
		return "", fmt.Errorf("%s/bird is not BIRD 1.6: %v %s", dir, err, out)
	}
	bird16.dir = dir
	return dir, nil
}

func fetchBird16(ctx context.Context) error {
	tmp, err := os.MkdirTemp(filepath.Dir(bird16Cache), "bird16-")
	if err != nil {
		if err := os.MkdirAll(filepath.Dir(bird16Cache), 0o755); err != nil {
			return err
		}
		if tmp, err = os.MkdirTemp(filepath.Dir(bird16Cache), "bird16-"); err != nil {
			return err
		}
	}
	defer os.RemoveAll(tmp)
	download := func() error {
		cmd := exec.CommandContext(ctx, "apt-get", "download", "-q", "bird")
		cmd.Dir = tmp
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("apt-get download bird: %w: %s", err, out)
		}
		return nil
	}
	if err := download(); err != nil {
		if out, uerr := exec.CommandContext(ctx, "apt-get", "update", "-qq").CombinedOutput(); uerr != nil {
			return errors.Join(err, fmt.Errorf("apt-get update: %w: %s", uerr, out))
		}
		if err := download(); err != nil {
			return err
		}
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "bird_1.6*.deb"))
	if len(debs) != 1 {
		return fmt.Errorf("apt-get download bird did not fetch a 1.6 package: %v", debs)
	}
	root := filepath.Join(tmp, "root")
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[0], root).CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg-deb -x: %w: %s", err, out)
	}
	os.RemoveAll(bird16Cache)
	return os.Rename(root, bird16Cache)
}
