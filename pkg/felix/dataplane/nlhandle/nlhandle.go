// Package nlhandle opens netlink handles bound to a network namespace, with a socket timeout, and
// retries netlink dumps the kernel interrupted. The dataplane's kernel pieces (routes, interfaces,
// VXLAN) share it.
package nlhandle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// SocketTimeout bounds every netlink request, so a lost reply cannot hang the caller forever.
const SocketTimeout = 10 * time.Second

// maxDumpAttempts bounds RetryDump.
const maxDumpAttempts = 8

// Open opens a netlink handle in the namespace at nsPath ("" = the current one). The handle keeps
// its own sockets in that namespace; the caller closes it.
func Open(nsPath string) (*netlink.Handle, error) {
	ns := netns.None()
	if nsPath != "" {
		var err error
		if ns, err = netns.GetFromPath(nsPath); err != nil {
			return nil, fmt.Errorf("opening network namespace %s: %w", nsPath, err)
		}
		defer ns.Close()
	}
	h, err := netlink.NewHandleAt(ns)
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
// it (the partial result is discarded), backing off from 1 ms.
func RetryDump[T any](ctx context.Context, dump func() (T, error)) (T, error) {
	delay := time.Millisecond
	for attempt := 1; ; attempt++ {
		v, err := dump()
		if !errors.Is(err, netlink.ErrDumpInterrupted) || attempt == maxDumpAttempts {
			return v, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			var zero T
			return zero, ctx.Err()
		case <-t.C:
		}
		delay *= 2
	}
}
