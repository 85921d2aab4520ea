package nlhandle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/internal/backoff"
)

// SocketTimeout bounds every netlink request, so a lost reply cannot hang the caller forever.
const SocketTimeout = 10 * time.Second

// DumpAttempts bounds RetryDump: after that many interrupted dumps it returns the error.
const DumpAttempts = 10

// dumpDelays spaces out the repetitions of an interrupted dump (1 ms, 2 ms, ... 64 ms).
var dumpDelays = backoff.Backoff{Min: time.Millisecond, Max: 64 * time.Millisecond}

// Open opens a netlink handle in the namespace at nsPath ("" = the current one). The handle
// keeps its own sockets in that namespace; the caller closes it.
func Open(nsPath string) (*netlink.Handle, error) {
	h, ns, err := OpenNS(nsPath)
	if err != nil {
		return nil, err
	}
	if ns.IsOpen() {
		ns.Close()
	}
	return h, nil
}

// OpenNS is Open, also returning the namespace handle (netns.None() for the current namespace)
// for what needs the namespace itself, such as subscriptions. The caller closes both.
func OpenNS(nsPath string) (*netlink.Handle, netns.NsHandle, error) {
	ns := netns.None()
	if nsPath != "" {
		var err error
		if ns, err = netns.GetFromPath(nsPath); err != nil {
			return nil, ns, fmt.Errorf("opening network namespace %s: %w", nsPath, err)
		}
	}
	h, err := OpenAt(ns)
	if err != nil {
		if ns.IsOpen() {
			ns.Close()
		}
		return nil, netns.None(), err
	}
	return h, ns, nil
}

// OpenAt opens a netlink handle in an open namespace (netns.None(): the current one). It speaks
// rtnetlink only (links, addresses, routes, rules, neighbours, namespace ids): the library's
// default also opens XFRM and netfilter sockets, which nothing here uses, each a socket and, in
// another namespace, two setns calls.
func OpenAt(ns netns.NsHandle) (*netlink.Handle, error) {
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("opening netlink: %w", err)
	}
	if err := h.SetSocketTimeout(SocketTimeout); err != nil {
		h.Close()
		return nil, fmt.Errorf("opening netlink: %w", err)
	}
	return h, nil
}

// RetryDump repeats a netlink dump that the kernel interrupted because the table changed during
// it (the partial result is discarded), at most DumpAttempts times, backing off from 1 ms. Links
// come and go while containers start, and kernels before 6.9 interrupt an address dump whenever
// a link changes.
func RetryDump[T any](ctx context.Context, dump func() (T, error)) (T, error) {
	delays := dumpDelays
	for attempt := 1; ; attempt++ {
		v, err := dump()
		if !errors.Is(err, netlink.ErrDumpInterrupted) || attempt == DumpAttempts {
			return v, err
		}
		if err := delays.Wait(ctx); err != nil {
			var zero T
			return zero, err
		}
	}
}

// IsLinkNotFound reports whether err says the link does not exist: netlink's lookup error by
// name, or ENODEV/ENOENT from a request on an index that went away.
func IsLinkNotFound(err error) bool {
	return errors.As(err, new(netlink.LinkNotFoundError)) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENOENT)
}
