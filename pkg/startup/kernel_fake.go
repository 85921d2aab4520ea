package startup

import (
	"errors"
	"net/netip"
	"sync"

	"github.com/calico-host/calico-host/pkg/ipip"
)

// FakeKernel is an in-memory Kernel for tests.
type FakeKernel struct {
	mu     sync.Mutex
	ifaces []Interface
	routes map[netip.Prefix]netip.Addr
	noIPv6 bool
	events chan struct{}
	// IPIP is the namespace calico-felix's IPIP request goes to (NoDriver: the kernel has no
	// ipip driver).
	IPIP *ipip.Fake
}

// NewFakeKernel returns a fake with the given interfaces (in index order).
func NewFakeKernel(ifaces ...Interface) *FakeKernel {
	return &FakeKernel{ifaces: ifaces, routes: map[netip.Prefix]netip.Addr{}, events: make(chan struct{}, 1), IPIP: ipip.NewFake()}
}

// SetInterfaces replaces the interfaces and signals an address event.
func (f *FakeKernel) SetInterfaces(ifaces ...Interface) {
	f.mu.Lock()
	f.ifaces = ifaces
	f.mu.Unlock()
	select {
	case f.events <- struct{}{}:
	default:
	}
}

// SetRoute makes RouteSource return src for destinations inside dst.
func (f *FakeKernel) SetRoute(dst netip.Prefix, src netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[dst] = src
}

// SetIPv6Supported sets what IPv6Supported returns (true by default).
func (f *FakeKernel) SetIPv6Supported(ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noIPv6 = !ok
}

// Interfaces returns a copy of the interfaces.
func (f *FakeKernel) Interfaces() ([]Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Interface, len(f.ifaces))
	for i, iface := range f.ifaces {
		out[i] = Interface{Index: iface.Index, Name: iface.Name, Addrs: append([]netip.Prefix(nil), iface.Addrs...)}
	}
	return out, nil
}

// RouteSource returns the source of the most specific route containing dst.
func (f *FakeKernel) RouteSource(dst netip.Addr) (netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	best, src := -1, netip.Addr{}
	for p, s := range f.routes {
		if p.Contains(dst) && p.Bits() > best {
			best, src = p.Bits(), s
		}
	}
	if best < 0 {
		return netip.Addr{}, errors.New("network is unreachable")
	}
	return src, nil
}

// AddressEvents signals SetInterfaces calls.
func (f *FakeKernel) AddressEvents() <-chan struct{} { return f.events }

// IPv6Supported is true unless SetIPv6Supported(false) was called.
func (f *FakeKernel) IPv6Supported() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.noIPv6
}

// Close does nothing.
func (f *FakeKernel) Close() error { return nil }

// IPIPDevice implements Kernel on f.IPIP.
func (f *FakeKernel) IPIPDevice() error { return probeIPIP(f.IPIP) }
