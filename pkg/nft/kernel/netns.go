package kernel

import (
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// ownNamespaceRefused is set by RefuseOwnNamespace, and ownNamespace is the
// identity of the namespace the process was in then.
var (
	ownNamespaceRefused atomic.Bool
	ownNamespace        atomic.Pointer[unix.Stat_t]
)

var errOwnNamespace = errors.New("refusing to program this process's own network namespace " +
	"(RefuseOwnNamespace is in force: tests program only namespaces they create)")

// RefuseOwnNamespace makes every later New refuse the network namespace
// this process is in now, whether asked for with Config.NetNS 0 or with a
// descriptor of that namespace. Tests call it from an init function, so
// that nothing they run can change the host's own nftables. It cannot be
// undone. (The namespace is remembered rather than looked up later: code
// that switches threads between namespaces may leave a thread elsewhere.)
func RefuseOwnNamespace() {
	var st unix.Stat_t
	if unix.Stat("/proc/thread-self/ns/net", &st) == nil {
		ownNamespace.CompareAndSwap(nil, &st)
	}
	ownNamespaceRefused.Store(true)
}

// openTarget takes the backend's own duplicate of the caller's namespace
// descriptor, so that the caller closing its descriptor can never let the
// number be reused by another file (the socket library opens the calling
// thread's namespace while it switches, and a reused number would point the
// socket at the host's namespace). 0 stays 0: the caller's namespace.
func openTarget(fd int) (int, error) {
	if fd == 0 {
		if ownNamespaceRefused.Load() {
			return -1, errOwnNamespace
		}
		return 0, nil
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return -1, fmt.Errorf("network namespace descriptor %d: %w", fd, err)
	}
	if err := checkNetNS(dup); err != nil {
		unix.Close(dup)
		return -1, fmt.Errorf("network namespace descriptor %d: %w", fd, err)
	}
	return dup, nil
}

// checkNetNS checks that fd is a network namespace, and not ours when that
// is refused.
func checkNetNS(fd int) error {
	typ, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE)
	if err != nil || typ != unix.CLONE_NEWNET {
		return errors.New("not a network namespace")
	}
	own := ownNamespace.Load()
	if !ownNamespaceRefused.Load() || own == nil {
		return nil
	}
	var target unix.Stat_t
	if err := unix.Fstat(fd, &target); err != nil {
		return err
	}
	if target.Dev == own.Dev && target.Ino == own.Ino {
		return errOwnNamespace
	}
	return nil
}
