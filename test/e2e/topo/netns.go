package topo

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netns"
)

// Netns is a named network namespace (/var/run/netns/<Name>) created by this package.
type Netns struct {
	Name    string
	deleted atomic.Bool
}

// Delete removes the namespace now (and kills what runs in it); later calls do nothing.
func (n *Netns) Delete() {
	if n.deleted.CompareAndSwap(false, true) {
		deleteNetns(n.Name)
	}
}

// Path is the namespace's bind-mount path, as CNI_NETNS wants it.
func (n *Netns) Path() string { return "/var/run/netns/" + n.Name }

// createNetns adds the namespace and brings its loopback up.
func createNetns(ctx context.Context, name string) (*Netns, error) {
	if _, err := run(ctx, nil, "ip", "netns", "add", name); err != nil {
		return nil, err
	}
	n := &Netns{Name: name}
	if _, err := n.Exec(ctx, "ip", "link", "set", "lo", "up"); err != nil {
		deleteNetns(name)
		return nil, err
	}
	return n, nil
}

// deleteNetns kills every process left in the namespace and deletes it (errors ignored: it is
// used on cleanup paths).
func deleteNetns(name string) {
	killNetnsPids(name)
	exec.Command("ip", "netns", "del", name).Run()
}

// killNetnsPids SIGKILLs the processes whose network namespace is this one.
func killNetnsPids(name string) {
	out, err := exec.Command("ip", "netns", "pids", name).Output()
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(out)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil && pid > 1 && pid != os.Getpid() {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
	}
}

// Exec runs a command inside the namespace and returns its combined output.
func (n *Netns) Exec(ctx context.Context, args ...string) (string, error) {
	return run(ctx, nil, append([]string{"ip", "netns", "exec", n.Name}, args...)...)
}

// ExecInput is Exec with stdin and extra environment variables.
func (n *Netns) ExecInput(ctx context.Context, stdin []byte, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s (in %s): %w: %s", strings.Join(args, " "), n.Name, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// run runs a command and returns its combined output; the error carries the output.
func run(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Do runs fn on an OS thread switched into the namespace. Sockets created by fn belong to the
// namespace for their whole life, whichever thread uses them later. fn must not start
// processes or goroutines that expect to inherit the namespace.
func (n *Netns) Do(fn func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("reading the current network namespace: %w", err)
	}
	defer orig.Close()
	target, err := netns.GetFromName(n.Name)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("opening network namespace %s: %w", n.Name, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering network namespace %s: %w", n.Name, err)
	}
	fnErr := fn()
	if err := netns.Set(orig); err != nil {
		// Leave the thread locked: Go destroys it when this goroutine ends, so no other
		// goroutine ever runs in the wrong namespace.
		return fmt.Errorf("returning from network namespace %s: %w", n.Name, err)
	}
	runtime.UnlockOSThread()
	return fnErr
}

// DialContext opens a connection from inside the namespace (network "tcp", "udp", ...).
func (n *Netns) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.Do(func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Listen opens a TCP listener inside the namespace.
func (n *Netns) Listen(addr string) (net.Listener, error) {
	var l net.Listener
	err := n.Do(func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	})
	return l, err
}

// ListenPacket opens a UDP socket inside the namespace.
func (n *Netns) ListenPacket(addr string) (net.PacketConn, error) {
	var c net.PacketConn
	err := n.Do(func() error {
		var err error
		c, err = net.ListenPacket("udp", addr)
		return err
	})
	return c, err
}

// HTTPGet fetches http://addr/path from inside the namespace and returns the status code.
func (n *Netns) HTTPGet(ctx context.Context, addr, path string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := n.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
	}
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		return 0, "", err
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(c); err != nil {
		return 0, "", err
	}
	var code int
	head, body, _ := strings.Cut(buf.String(), "\r\n\r\n")
	if _, err := fmt.Sscanf(head, "HTTP/1.%d %d", new(int), &code); err != nil {
		return 0, "", fmt.Errorf("bad HTTP reply %q", head)
	}
	return code, body, nil
}

// NewNetns creates the network namespace name (loopback up) outside any fabric, for harnesses
// that need only a namespace (test/fleet); the caller deletes it.
func NewNetns(ctx context.Context, name string) (*Netns, error) { return createNetns(ctx, name) }
