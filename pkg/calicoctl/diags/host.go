package diags

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/calico-host/calico-host/pkg/datastore"
)

// Host is the machine diagnosed, as the collectors see it. Tests point Root at a fake tree and
// run the commands in a network namespace of their own.
type Host struct {
	// Root is where the host's files are read from ("/" on a real host).
	Root string
	// Run runs a command and returns its combined output (nil: os/exec, killed when ctx ends).
	Run func(ctx context.Context, name string, args ...string) ([]byte, error)
	// CommandPrefix, with the default Run, is put before every command (tests run the
	// commands in a namespace of their own with "ip netns exec <ns>").
	CommandPrefix []string
	// LookPath finds a command (nil: exec.LookPath).
	LookPath func(name string) (string, error)
	// HTTPGet fetches a URL (nil: net/http).
	HTTPGet func(ctx context.Context, url string) ([]byte, error)
	// BIRDSockets are BIRD's control sockets to try, in order (absolute paths, not under Root).
	BIRDSockets []string
	// Datastore is the etcd connection (nil: DatastoreErr says why there is none).
	Datastore    *datastore.Client
	DatastoreErr error
	// NodeName is this host's Node name.
	NodeName string
	// LogDir is a directory of log files to include ("" or absent: none).
	LogDir string
	// Versions are lines about the running calicoctl (its version, build).
	Versions string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// MaxCollectorTime, when set, caps every collector's time (tests use a short one).
	MaxCollectorTime time.Duration
}

func (h *Host) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// path is p (absolute, as on the host) under Root.
func (h *Host) path(p string) string {
	root := h.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(root, p)
}

// readFile reads a host file, at most maxFileSize bytes of it.
func (h *Host) readFile(p string) ([]byte, error) {
	f, err := os.Open(h.path(p))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readCapped(f)
}

func readCapped(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if len(data) > maxFileSize {
		data = append(data[:maxFileSize], []byte("\n[cut at 32 MiB]\n")...)
	}
	return data, err
}

// command runs a command on the host; a command the host lacks is errMissing.
func (h *Host) command(ctx context.Context, name string, args ...string) ([]byte, error) {
	lookPath := h.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	if _, err := lookPath(name); err != nil {
		return nil, fmt.Errorf("%s: %w", name, errMissing)
	}
	run := h.Run
	if run == nil {
		run = h.runCommand
	}
	out, err := run(ctx, name, args...)
	if err != nil {
		return out, fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return out, nil
}

// directClient never goes through a proxy: the metrics servers are on this host.
var directClient = &http.Client{Transport: &http.Transport{Proxy: nil}}

// errMissing: the host does not have the command.
var errMissing = errors.New("command not found on this host")

func (h *Host) runCommand(ctx context.Context, name string, args ...string) ([]byte, error) {
	argv := append(append(append([]string{}, h.CommandPrefix...), name), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	cmd.Env = append(os.Environ(), "LC_ALL=C", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0")
	err := cmd.Run()
	data := out.Bytes()
	if len(data) > maxFileSize {
		data = append(data[:maxFileSize], []byte("\n[cut at 32 MiB]\n")...)
	}
	return data, err
}

// httpGet fetches a URL with the host's getter.
func (h *Host) httpGet(ctx context.Context, url string) ([]byte, error) {
	if h.HTTPGet != nil {
		return h.HTTPGet(ctx, url)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := directClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := readCapped(resp.Body)
	if err != nil {
		return data, fmt.Errorf("reading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return data, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return data, nil
}
