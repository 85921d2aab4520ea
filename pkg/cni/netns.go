package cni

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nlhandle"
)

// errNoNetNS: the container's network namespace does not exist (any more).
var errNoNetNS = errors.New("network namespace does not exist")

// netNS is an open container network namespace with a netlink handle inside it.
type netNS struct {
	path string
	ns   netns.NsHandle
	nl   *netlink.Handle
}

// openNetNS opens a network namespace by path. A missing path is errNoNetNS; a path that is not a
// network namespace is an error too.
func openNetNS(path string) (*netNS, error) {
	if path == "" {
		return nil, fmt.Errorf("no network namespace given: %w", errNoNetNS)
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, errNoNetNS)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return nil, fmt.Errorf("inspecting %s: %w", path, err)
	}
	if st.Type != unix.NSFS_MAGIC && st.Type != unix.PROC_SUPER_MAGIC {
		return nil, fmt.Errorf("%s is not a network namespace", path)
	}
	h, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("opening network namespace %s: %w", path, err)
	}
	nl, err := nlhandle.OpenAt(h)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("netlink socket in %s: %w", path, err)
	}
	return &netNS{path: path, ns: h, nl: nl}, nil
}

func (n *netNS) Close() {
	n.nl.Close()
	n.ns.Close()
}

// Do runs fn with the calling OS thread inside the namespace (for /proc/sys writes), then moves
// the thread back. A thread that cannot be moved back is never reused.
func (n *netNS) Do(fn func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("reading the current network namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(n.ns); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering %s: %w", n.path, err)
	}
	fnErr := fn()
	if err := netns.Set(orig); err != nil {
		return errors.Join(fnErr, fmt.Errorf("returning from %s: %w", n.path, err)) // thread stays locked and dies
	}
	runtime.UnlockOSThread()
	return fnErr
}

// sysctl is one setting; names use "/" for the interface part so that dots in names are kept.
type sysctl struct{ name, value string }

func writeSysctls(s []sysctl) error {
	for _, c := range s {
		path := "/proc/sys/" + c.name
		if err := os.WriteFile(path, []byte(c.value), 0o644); err != nil {
			return fmt.Errorf("setting %s=%s: %w", c.name, c.value, err)
		}
	}
	return nil
}

// ownNetNSPaths name the network namespaces the plugin runs in (the thread's and the process's).
var ownNetNSPaths = []string{"/proc/thread-self/ns/net", "/proc/self/ns/net"}

// isOwnNetNS reports whether path is the network namespace the plugin runs in, compared by
// identity (device and inode of the namespace), whatever path names it. A path that cannot be
// read is not the plugin's namespace (openNetNS reports it).
func isOwnNetNS(path string) (bool, error) {
	var target unix.Stat_t
	if err := unix.Stat(path, &target); err != nil {
		return false, nil
	}
	read := 0
	for _, p := range ownNetNSPaths {
		var own unix.Stat_t
		if err := unix.Stat(p, &own); err != nil {
			continue // /proc/thread-self is missing before Linux 3.17
		}
		read++
		if own.Dev == target.Dev && own.Ino == target.Ino {
			return true, nil
		}
	}
	if read == 0 {
		return false, fmt.Errorf("cannot read the plugin's own network namespace (%v)", ownNetNSPaths)
	}
	return false, nil
}
