package confd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/calico-host/calico-host/internal/atomicfile"
)

// CommandTimeout bounds each check and reload command.
const CommandTimeout = 30 * time.Second

// Runner runs an external command and returns its combined output (exec in production).
type Runner func(ctx context.Context, argv []string) ([]byte, error)

// commandWaitDelay is how long a timed-out command's output is still read after it was killed.
const commandWaitDelay = time.Second

// ExecRunner runs commands with os/exec, each for CommandTimeout at most.
func ExecRunner(ctx context.Context, argv []string) ([]byte, error) {
	return runCommand(ctx, CommandTimeout, argv)
}

// runCommand runs argv in a process group of its own. When ctx ends or timeout passes the whole
// group is killed (a check or reload command's children too), and the call returns even if
// something still holds its output open.
func runCommand(ctx context.Context, timeout time.Duration, argv []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = commandWaitDelay
	return cmd.CombinedOutput()
}

// CheckError is a staged file that its check command rejected.
type CheckError struct {
	Dest    string
	Command string
	Output  string
	Err     error
}

func (e *CheckError) Error() string {
	out := strings.TrimSpace(e.Output)
	if out == "" {
		return fmt.Sprintf("checking %s with %q: %v", e.Dest, e.Command, e.Err)
	}
	return fmt.Sprintf("checking %s with %q: %v: %s", e.Dest, e.Command, e.Err, out)
}

func (e *CheckError) Unwrap() error { return e.Err }

// Stager writes rendered files safely: all of them are written into a staging directory next to
// each other (so relative includes resolve to the staged versions), checked, and only if every
// check passes are the changed ones renamed over their destinations. A failed check leaves
// every destination as it was.
type Stager struct {
	Dir string // the staging directory, on the same file system as the destinations
	Run Runner
}

// Apply stages, checks and swaps files. It returns the files whose destination changed.
func (s *Stager) Apply(ctx context.Context, files []Rendered) ([]Rendered, error) {
	if err := os.RemoveAll(s.Dir); err != nil {
		return nil, fmt.Errorf("clearing staging directory: %w", err)
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating staging directory: %w", err)
	}
	defer os.RemoveAll(s.Dir)
	for _, f := range files {
		if err := s.stage(f); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		if err := s.check(ctx, f); err != nil {
			return nil, err
		}
	}
	return s.swap(files)
}

func (s *Stager) stagedPath(f Rendered) string { return filepath.Join(s.Dir, filepath.Base(f.Dest)) }

func (s *Stager) stage(f Rendered) error {
	mode, err := f.Template.FileMode()
	if err != nil {
		return err
	}
	if err := writeFileSync(s.stagedPath(f), f.Data, mode); err != nil {
		return fmt.Errorf("staging %s: %w", f.Dest, err)
	}
	return nil
}

// writeFileSync writes data and flushes it to disk before closing.
func writeFileSync(path string, data []byte, mode fs.FileMode) error {
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := fh.Write(data); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Chmod(mode); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Sync(); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// check runs the file's check command on its staged copy.
func (s *Stager) check(ctx context.Context, f Rendered) error {
	if strings.TrimSpace(f.Template.CheckCmd) == "" {
		return nil
	}
	argv, err := expandCommand(f.Template.CheckCmd, map[string]string{"src": s.stagedPath(f), "dest": f.Dest})
	if err != nil {
		return fmt.Errorf("check command of %s: %w", f.Dest, err)
	}
	out, err := s.Run(ctx, argv)
	if err != nil {
		return &CheckError{Dest: f.Dest, Command: strings.Join(argv, " "), Output: string(out), Err: err}
	}
	return nil
}

// expandCommand fills in {{.src}} and {{.dest}} and splits the command on blanks.
func expandCommand(cmd string, vars map[string]string) ([]string, error) {
	t, err := template.New("cmd").Option("missingkey=error").Parse(cmd)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, vars); err != nil {
		return nil, err
	}
	argv := strings.Fields(buf.String())
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	return argv, nil
}

// swap moves every changed staged file over its destination: first the files that are not
// checked on their own (the includes), then the checked ones (the main configuration that
// includes them), so that a BIRD started or reloaded between two renames never reads a new
// main file whose new include is not there yet.
func (s *Stager) swap(files []Rendered) ([]Rendered, error) {
	var changed []Rendered
	ordered := slices.Clone(files)
	checked := func(f Rendered) int {
		if f.Template.CheckCmd != "" {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(ordered, func(a, b Rendered) int { return checked(a) - checked(b) })
	for _, f := range ordered {
		same, err := sameContent(f)
		if err != nil {
			return changed, err
		}
		if same {
			continue
		}
		if err := s.install(f); err != nil {
			return changed, fmt.Errorf("installing %s: %w", f.Dest, err)
		}
		changed = append(changed, f)
	}
	return changed, nil
}

// sameContent reports whether the destination already holds exactly this file.
func sameContent(f Rendered) (bool, error) {
	mode, _ := f.Template.FileMode()
	st, err := os.Stat(f.Dest)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", f.Dest, err)
	}
	old, err := os.ReadFile(f.Dest)
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", f.Dest, err)
	}
	return bytes.Equal(old, f.Data) && st.Mode().Perm() == mode, nil
}

// install renames the staged (fsynced) file over the destination and fsyncs the directory, so
// the swap is atomic and survives a crash. Across file systems it writes a uniquely named
// temporary file next to the destination and renames that (atomicfile.Write).
func (s *Stager) install(f Rendered) error {
	dir := filepath.Dir(f.Dest)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	err := os.Rename(s.stagedPath(f), f.Dest)
	if errors.Is(err, syscall.EXDEV) {
		mode, _ := f.Template.FileMode()
		return atomicfile.Write(f.Dest, f.Data, mode)
	}
	if err != nil {
		return err
	}
	return atomicfile.SyncDir(dir)
}
