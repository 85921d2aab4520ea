package startup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/calico-host/calico-host/internal/atomicfile"
	"github.com/calico-host/calico-host/pkg/config"
	"github.com/calico-host/calico-host/pkg/daemon"
)

var nodeNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// checkNodeName accepts an empty name (determined later) or a DNS subdomain name, as the
// datastore requires for Node names.
func checkNodeName(name string) error {
	if name == "" {
		return nil
	}
	if len(name) > 253 || !nodeNameRE.MatchString(name) {
		return fmt.Errorf("node names must be lower case alphanumerics, '-' and '.', starting and ending with an alphanumeric")
	}
	return nil
}

// calicoVersionRE is a release version as Project Calico's tools compare it ("v3.30.2", "3.30.2-0.dev").
var calicoVersionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}$`)

// checkCalicoVersion accepts an empty value (never write calicoVersion) or a version string.
func checkCalicoVersion(v string) error {
	if v != "" && !calicoVersionRE.MatchString(v) {
		return fmt.Errorf("a version such as v3.30.2: letters, digits, '.', '+', '_' and '-', at most 64 characters")
	}
	return nil
}

func checkSeverity(s string) error {
	_, err := daemon.ParseLevel(s)
	return err
}

// DetermineNodeName returns this host's node name, as Project Calico decides it: the configured
// name (NODENAME), else the nodename file written by an earlier run, else $HOSTNAME lowercased,
// else the OS hostname lowercased.
func DetermineNodeName(configured, nodenameFile string, env config.Env, hostname func() (string, error)) (string, error) {
	if configured != "" {
		return configured, nil
	}
	data, err := os.ReadFile(nodenameFile)
	switch {
	case err == nil:
		if name := strings.TrimSpace(string(data)); name != "" {
			return name, checkFileName(nodenameFile, name)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("reading node name from %s: %w", nodenameFile, err)
	}
	if h, ok := env("HOSTNAME"); ok && strings.TrimSpace(h) != "" {
		return checkedHostname(strings.ToLower(strings.TrimSpace(h)))
	}
	h, err := hostname()
	if err != nil {
		return "", fmt.Errorf("reading the hostname: %w", err)
	}
	return checkedHostname(strings.ToLower(strings.TrimSpace(h)))
}

func checkFileName(file, name string) error {
	if err := checkNodeName(name); err != nil {
		return fmt.Errorf("node name %q in %s: %w", name, file, err)
	}
	return nil
}

func checkedHostname(name string) (string, error) {
	if err := checkNodeName(name); err != nil || name == "" {
		return "", fmt.Errorf("hostname %q cannot be a node name (set nodename / NODENAME): %v", name, err)
	}
	return name, nil
}

// writeNodeName records the node name for the other components: atomically and durably, through
// a uniquely named temporary file in the same directory (fsynced, renamed, directory fsynced).
func writeNodeName(path, name string) error {
	if cur, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(cur)) == name {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	if err := atomicfile.Write(path, []byte(name), 0o644); err != nil {
		return fmt.Errorf("recording the node name: %w", err)
	}
	return nil
}
