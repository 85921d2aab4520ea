package confd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/calico-host/calico-host/pkg/birdctl"
)

// ErrBIRDNotRunning means a reload found no BIRD to talk to. It is not a failure: BIRD reads the
// new files when it starts.
var ErrBIRDNotRunning = birdctl.ErrNotRunning

// Reloader makes BIRD (or whatever a template's reload command names) pick up changed files.
type Reloader struct {
	// Socket is BIRD's control socket, used by the built-in reload (an empty reload_cmd).
	Socket string
	Run    Runner
}

// Reload runs each distinct reload command of the changed files once, in order. It returns
// BIRD's answer to the built-in reload, and an error wrapping ErrBIRDNotRunning when BIRD's
// socket is absent (for the built-in reload, or an external command that failed).
func (r *Reloader) Reload(ctx context.Context, changed []Rendered) (string, error) {
	seen := map[string]bool{}
	var msgs []string
	var errs []error
	for _, f := range changed {
		cmd := strings.TrimSpace(f.Template.ReloadCmd)
		if seen[cmd] {
			continue
		}
		seen[cmd] = true
		msg, err := r.reloadOne(ctx, cmd)
		if msg != "" {
			msgs = append(msgs, msg)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return strings.Join(msgs, "; "), errors.Join(errs...)
}

func (r *Reloader) reloadOne(ctx context.Context, cmd string) (string, error) {
	if cmd == "" {
		msg, err := birdctl.Configure(ctx, r.Socket)
		if err != nil {
			return "", fmt.Errorf("reloading BIRD: %w", err)
		}
		return "BIRD: " + msg, nil
	}
	argv, err := expandCommand(cmd, map[string]string{"socket": r.Socket})
	if err != nil {
		return "", fmt.Errorf("reload command %q: %w", cmd, err)
	}
	out, err := r.Run(ctx, argv)
	if err == nil {
		return "", nil
	}
	err = fmt.Errorf("reload command %q: %w: %s", cmd, err, strings.TrimSpace(string(out)))
	if r.socketAbsent() {
		return "", fmt.Errorf("%w: %w", ErrBIRDNotRunning, err)
	}
	return "", err
}

func (r *Reloader) socketAbsent() bool {
	if r.Socket == "" {
		return false
	}
	_, err := os.Stat(r.Socket)
	return errors.Is(err, fs.ErrNotExist)
}
