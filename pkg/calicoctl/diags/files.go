package diags

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Configuration files collected (redacted): calico-host's TOML, the environment files of its
// units, the CNI network configuration and the node name. Key material (/etc/calico/pki,
// /etc/calico/bgp-secrets) is never read.
var configGlobs = []string{
	"/etc/calico/*.toml",
	"/etc/calico/confd/conf.d/*.toml",
	"/etc/default/calico-*",
	"/etc/cni/net.d/*calico*",
	"/var/lib/calico/nodename",
}

// birdConfigDir is where calico-confd renders BIRD's configuration.
const birdConfigDir = "/etc/calico/confd/config"

func collectConfigFiles(_ context.Context, h *Host) ([]File, error) {
	var files []File
	var errs []error
	for _, g := range configGlobs {
		matches, err := filepath.Glob(h.path(g))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sort.Strings(matches)
		for _, m := range matches {
			rel := strings.TrimPrefix(m, h.path("/"))
			data, err := h.readFile("/" + rel)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			files = append(files, File{Name: path.Join("config", filepath.ToSlash(rel)), Data: data})
		}
	}
	return files, joinErrs(errs)
}

// collectBIRDConfig copies confd's rendered BIRD configuration (passwords are redacted).
func collectBIRDConfig(ctx context.Context, h *Host) ([]File, error) {
	files, err := h.readTree(ctx, birdConfigDir, "bird/config")
	if errors.Is(err, fs.ErrNotExist) {
		return []File{{Name: "bird/config/NOTE.txt", Data: []byte(birdConfigDir + " does not exist: calico-confd has not rendered BIRD's configuration.\n")}}, nil
	}
	return files, err
}

// collectLogs copies the files of the log directory, if there is one (calico-host logs to the
// journal; the directory is for Project Calico's --log-dir and whatever the operator adds).
func collectLogs(ctx context.Context, h *Host) ([]File, error) {
	if h.LogDir == "" {
		return nil, nil
	}
	files, err := h.readTree(ctx, h.LogDir, "logs")
	if errors.Is(err, fs.ErrNotExist) {
		return []File{{Name: "logs/NOTE.txt", Data: []byte(h.LogDir + " does not exist: no log files collected.\n")}}, nil
	}
	return files, err
}

// readTree reads every regular file under dir (a host path) into bundle directory to.
func (h *Host) readTree(ctx context.Context, dir, to string) ([]File, error) {
	root := h.path(dir)
	if _, err := os.Stat(root); err != nil {
		return nil, err
	}
	var files []File
	var errs []error
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		data, err := h.readFile(filepath.Join(dir, rel))
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		files = append(files, File{Name: path.Join(to, filepath.ToSlash(rel)), Data: data})
		return nil
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("reading %s: %w", dir, err))
	}
	return files, joinErrs(errs)
}
