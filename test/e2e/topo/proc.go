package topo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a daemon started in a namespace, its output appended to a log file. It can be
// stopped, killed and started again with the same command line.
type Proc struct {
	Name    string // e.g. "host-1/felix"
	LogPath string
	// Notify records what the daemon tells systemd (nil: NOTIFY_SOCKET is unset).
	Notify *Notify
	ns     *Netns
	args   []string
	env    []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exits
	err  error         // exit status once done is closed
}

// newProc describes a process; Start runs it.
func newProc(name string, ns *Netns, logPath string, env []string, args ...string) *Proc {
	return &Proc{Name: name, LogPath: logPath, ns: ns, args: args, env: env}
}

// Start runs the process (again). The log file is appended to, with a marker line.
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !p.exited() {
		return fmt.Errorf("%s is already running", p.Name)
	}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "==== %s start %s: %s\n", time.Now().Format(time.RFC3339Nano), p.Name, strings.Join(p.args, " "))
	argv := p.args
	if p.ns != nil {
		argv = append([]string{"ip", "netns", "exec", p.ns.Name}, p.args...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), p.env...)
	if p.Notify != nil {
		p.Notify.reset()
		cmd.Env = append(cmd.Env, "NOTIFY_SOCKET="+p.Notify.Path)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Die with us, even on a crash: nothing outlives the test or the demo.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting %s: %w", p.Name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		err := cmd.Wait()
		logf.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}(p.done)
	return nil
}

func (p *Proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Running reports whether the process is running.
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && !p.exited()
}

// Pid is the process id (0 when not started). ip netns exec execs the command, so this is the
// daemon itself.
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Done is closed when the current run exits.
func (p *Proc) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// ExitErr is the exit status of the last run (nil while running or after a clean exit).
func (p *Proc) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Signal sends sig and waits up to timeout for the exit; it then kills the process.
func (p *Proc) Signal(sig syscall.Signal, timeout time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s did not exit within %s of %s; killed", p.Name, timeout, sig)
	}
}

// Stop sends SIGTERM and waits (killing it after 10 s).
func (p *Proc) Stop() error { return p.Signal(syscall.SIGTERM, 10*time.Second) }

// Kill sends SIGKILL and waits for the exit.
func (p *Proc) Kill() { p.Signal(syscall.SIGKILL, 10*time.Second) }

// Restart stops the process and starts it again.
func (p *Proc) Restart() error {
	p.Stop()
	return p.Start()
}

// WaitExit waits for the current run to end and returns its exit status.
func (p *Proc) WaitExit(ctx context.Context) error {
	done := p.Done()
	if done == nil {
		return errors.New(p.Name + " was never started")
	}
	select {
	case <-done:
		return p.ExitErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// LogTail returns the last n bytes of the log.
func (p *Proc) LogTail(n int) string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return ""
	}
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

// Rss is the resident set size of the running process, in bytes (0 when not running).
func (p *Proc) Rss() int64 {
	v, _ := procStatus(p.Pid(), "VmRSS")
	return v
}

// procStatus reads a "kB" field of /proc/<pid>/status, in bytes.
func procStatus(pid int, field string) (int64, error) {
	if pid == 0 {
		return 0, errors.New("no process")
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			var kb int64
			if _, err := fmt.Sscan(strings.TrimSpace(v), &kb); err != nil {
				return 0, err
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// PeakRss is the peak resident set size (VmHWM) of the running process, in bytes.
func (p *Proc) PeakRss() int64 {
	v, _ := procStatus(p.Pid(), "VmHWM")
	return v
}

// NewProc describes a process run in ns (nil: the current namespace) with its output appended to
// logPath, outside any fabric; Start runs it and the caller stops it.
func NewProc(name string, ns *Netns, logPath string, args ...string) *Proc {
	return newProc(name, ns, logPath, nil, args...)
}
