package startup

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/calico-host/calico-host/pkg/nlhandle"
)

// Interface is one host interface with its addresses (address + prefix length of its subnet).
type Interface struct {
	Index int
	Name  string
	Addrs []netip.Prefix
}

// Kernel is what calico-startup reads from the kernel. The netlink implementation works on the
// network namespace it was created for; FakeKernel stands in for it in unit tests.
type Kernel interface {
	// Interfaces lists every interface in index order with its IPv4 and IPv6 addresses.
	Interfaces() ([]Interface, error)
	// RouteSource is the source address the kernel would use to reach dst.
	RouteSource(dst netip.Addr) (netip.Addr, error)
	// AddressEvents receives a value after host addresses changed (coalesced: one pending value at most).
	AddressEvents() <-chan struct{}
	// IPv6Supported reports whether the kernel has IPv6 (/proc/sys/net/ipv6 exists).
	IPv6Supported() bool
	// IPIPDevice reports whether the kernel can have the IPIP tunnel device tunl0, by
	// calico-felix's request for it (see probeIPIP); ipip.ErrNoDriver when it has no ipip driver.
	IPIPDevice() error
	// Close stops the address subscription and releases the netlink sockets.
	Close() error
}

// netlinkKernel is Kernel over a netlink handle of one network namespace.
type netlinkKernel struct {
	ns      netns.NsHandle // netns.None(): the namespace current when the kernel was created
	h       *netlink.Handle
	log     zerolog.Logger
	events  chan struct{}
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closing atomic.Bool
}

// NewNetlinkKernel opens netlink in the current network namespace (no namespace switching, so it
// needs no capabilities) and subscribes to address changes.
func NewNetlinkKernel(log zerolog.Logger) (Kernel, error) {
	return newNetlinkKernel(netns.None(), log)
}

// NewNetlinkKernelAt opens netlink in the given network namespace (needs CAP_SYS_ADMIN).
func NewNetlinkKernelAt(ns netns.NsHandle, log zerolog.Logger) (Kernel, error) {
	return newNetlinkKernel(ns, log)
}

func newNetlinkKernel(ns netns.NsHandle, log zerolog.Logger) (Kernel, error) {
	h, err := nlhandle.OpenAt(ns)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &netlinkKernel{ns: ns, h: h, log: log, events: make(chan struct{}, 1), cancel: cancel}
	updates, done, err := k.subscribe()
	if err != nil {
		cancel()
		h.Close()
		return nil, err
	}
	k.wg.Add(1)
	go k.forward(ctx, updates, done)
	return k, nil
}

// subscribe opens an address subscription. The socket is created now, in the kernel's namespace.
func (k *netlinkKernel) subscribe() (chan netlink.AddrUpdate, chan struct{}, error) {
	updates, done := make(chan netlink.AddrUpdate, 64), make(chan struct{})
	opts := netlink.AddrSubscribeOptions{
		ErrorCallback: func(err error) {
			if k.closing.Load() {
				return // the socket was closed by Close
			}
			k.log.Warn().Err(err).Msg("Address subscription error; resubscribing")
		},
	}
	if k.ns.IsOpen() {
		ns := k.ns
		opts.Namespace = &ns
	}
	if err := netlink.AddrSubscribeWithOptions(updates, done, opts); err != nil {
		return nil, nil, fmt.Errorf("subscribing to address changes: %w", err)
	}
	return updates, done, nil
}

// forward turns address updates into coalesced events, resubscribing if the subscription breaks.
func (k *netlinkKernel) forward(ctx context.Context, updates chan netlink.AddrUpdate, done chan struct{}) {
	defer k.wg.Done()
	retry := time.NewTimer(0)
	retry.Stop()
	for {
		select {
		case <-ctx.Done():
			if done != nil {
				close(done)
			}
			return
		case _, ok := <-updates:
			if !ok {
				close(done)
				updates, done = nil, nil
				retry.Reset(time.Second)
			}
			k.notify()
		case <-retry.C:
			var err error
			if updates, done, err = k.subscribe(); err != nil {
				k.log.Warn().Err(err).Msg("Resubscribing to address changes failed; retrying")
				retry.Reset(5 * time.Second)
			}
			k.notify() // changes may have been missed
		}
	}
}

func (k *netlinkKernel) notify() {
	select {
	case k.events <- struct{}{}:
	default:
	}
}

func (k *netlinkKernel) AddressEvents() <-chan struct{} { return k.events }

func (k *netlinkKernel) Interfaces() ([]Interface, error) {
	links, err := nlhandle.RetryDump(context.Background(), k.h.LinkList)
	if err != nil {
		return nil, fmt.Errorf("listing interfaces: %w", err)
	}
	addrs, err := nlhandle.RetryDump(context.Background(), func() ([]netlink.Addr, error) { return k.h.AddrList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		return nil, fmt.Errorf("listing addresses: %w", err)
	}
	byIndex := map[int][]netip.Prefix{}
	for _, a := range addrs {
		if p, ok := nlhandle.Prefix(a.IPNet); ok {
			byIndex[a.LinkIndex] = append(byIndex[a.LinkIndex], p)
		}
	}
	out := make([]Interface, 0, len(links))
	for _, l := range links {
		attrs := l.Attrs()
		out = append(out, Interface{Index: attrs.Index, Name: attrs.Name, Addrs: byIndex[attrs.Index]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

func (k *netlinkKernel) RouteSource(dst netip.Addr) (netip.Addr, error) {
	routes, err := k.h.RouteGet(dst.AsSlice())
	if err != nil {
		return netip.Addr{}, err
	}
	for _, r := range routes {
		if src, ok := netip.AddrFromSlice(r.Src); ok && src.IsValid() && !src.IsUnspecified() {
			return src.Unmap(), nil
		}
	}
	return netip.Addr{}, errors.New("the route has no source address")
}

func (k *netlinkKernel) IPv6Supported() bool {
	_, err := os.Stat("/proc/sys/net/ipv6")
	return err == nil
}

func (k *netlinkKernel) Close() error {
	k.closing.Store(true)
	k.cancel()
	k.wg.Wait()
	k.h.Close()
	return nil
}
