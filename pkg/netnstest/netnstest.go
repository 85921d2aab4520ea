package netnstest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Privileged reports whether privileged tests can run here (as root). It is
// for TestMain, which has no testing.T and builds what those tests need
// only then; tests call Require.
func Privileged() bool { return os.Geteuid() == 0 }

// Require skips the test unless it runs as root with the given commands
// (ip is always needed).
func Require(t testing.TB, cmds ...string) {
	t.Helper()
	if !Privileged() {
		t.Skip("needs root")
	}
	for _, c := range append([]string{"ip"}, cmds...) {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("needs %s: %v", c, err)
		}
	}
}

// RequireLong is Require for slow tests, which also skip under -short.
func RequireLong(t testing.TB, cmds ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("slow privileged test; skipped under -short")
	}
	Require(t, cmds...)
}

// NS is a named network namespace.
type NS struct {
	Name string
	// FD is an open descriptor of the namespace, valid until the test ends.
	FD int
}

// New creates a namespace with lo up; role goes into its name.
func New(t testing.TB, role string) *NS {
	t.Helper()
	Require(t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "nst-" + role + "-" + hex.EncodeToString(b)
	Run(t, "ip", "netns", "add", name)
	f, err := os.Open("/run/netns/" + name)
	if err != nil {
		t.Fatalf("opening netns %s: %v", name, err)
	}
	ns := &NS{Name: name, FD: int(f.Fd())}
	t.Cleanup(func() {
		_ = f.Close()
		_ = exec.Command("ip", "netns", "del", name).Run()
	})
	ns.Exec(t, "ip", "link", "set", "lo", "up")
	return ns
}

// Link joins a and b with a veth pair named ifname on both sides, up, with
// the given addresses ("10.65.0.1/24", "fd5c::1/64"; IPv6 without duplicate
// address detection, so usable at once).
func Link(t testing.TB, a, b *NS, ifname string, addrsA, addrsB []string) {
	t.Helper()
	Run(t, "ip", "link", "add", ifname, "netns", a.Name, "type", "veth", "peer", "name", ifname, "netns", b.Name)
	for _, side := range []struct {
		ns    *NS
		addrs []string
	}{{a, addrsA}, {b, addrsB}} {
		for _, ad := range side.addrs {
			args := []string{"ip", "addr", "add", ad, "dev", ifname}
			if strings.Contains(ad, ":") {
				args = append(args, "nodad")
			}
			side.ns.Exec(t, args...)
		}
		side.ns.Exec(t, "ip", "link", "set", ifname, "up")
	}
}

// Path is the namespace's file, as the code under test takes it.
func (ns *NS) Path() string { return "/run/netns/" + ns.Name }

// Handle returns a netlink handle in the namespace, closed when the test ends.
func (ns *NS) Handle(t testing.TB) *netlink.Handle {
	t.Helper()
	h, err := netlink.NewHandleAt(netns.NsHandle(ns.FD))
	if err != nil {
		t.Fatalf("netlink handle in %s: %v", ns.Name, err)
	}
	t.Cleanup(h.Close)
	return h
}

// IP runs `ip -n <ns> args...` and fails the test if it fails.
func (ns *NS) IP(t testing.TB, args ...string) string {
	t.Helper()
	return Run(t, append([]string{"ip", "-n", ns.Name}, args...)...)
}

// Run runs a command and fails the test if it fails.
func Run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Exec runs a command inside the namespace and fails the test if it fails.
func (ns *NS) Exec(t testing.TB, args ...string) string {
	t.Helper()
	return Run(t, append([]string{"ip", "netns", "exec", ns.Name}, args...)...)
}

// Try runs a command inside the namespace and returns its output and error.
func (ns *NS) Try(args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns.Name}, args...)...).CombinedOutput()
	return string(out), err
}

// Do runs fn on a thread switched into the namespace; sockets made there
// stay in it.
func (ns *NS) Do(t testing.TB, fn func()) {
	t.Helper()
	if err := ns.In(func() error { fn(); return nil }); err != nil {
		t.Fatal(err)
	}
}

// In is Do for goroutines other than the test's: it returns fn's error, or
// the error switching namespaces, instead of failing the test.
func (ns *NS) In(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("opening the current network namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(netns.NsHandle(ns.FD)); err != nil {
		return fmt.Errorf("entering %s: %w", ns.Name, err)
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			panic(err) // never leave a thread in the wrong namespace
		}
	}()
	return fn()
}
