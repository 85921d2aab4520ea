package ipip

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// Fake is an in-memory Handle that records every request as an iproute2-like line ("link add
// tunl0 type ipip mtu 1480", "addr add 10.65.0.1/32 dev tunl0", ...). NoDriver makes link
// creation fail as a kernel without the ipip driver does.
type Fake struct {
	mu       sync.Mutex
	NoDriver bool
	links    map[string]*fakeLink
	requests []string
	next     int
}

type fakeLink struct {
	Link
	name  string
	addrs []netip.Prefix
}

// NewFake returns an empty namespace (lo only, as index 1).
func NewFake() *Fake {
	return &Fake{links: map[string]*fakeLink{"lo": {Link: Link{Index: 1, Kind: "", Up: true, MTU: 65536}, name: "lo"}}, next: 2}
}

// Requests returns the recorded requests and forgets them.
func (f *Fake) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.requests
	f.requests = nil
	return out
}

// AddLink adds a link as another party would (no request recorded).
func (f *Fake) AddLink(name, kind string, mtu int, up bool, addrs ...netip.Prefix) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.links[name] = &fakeLink{Link: Link{Index: f.next, Kind: kind, Up: up, MTU: mtu}, name: name, addrs: addrs}
	f.next++
}

// Dump describes tunl0 as "tunl0 ipip mtu M up|down addrs...", or "" without it.
func (f *Fake) Dump() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.links[DeviceName]
	if l == nil {
		return ""
	}
	state := "down"
	if l.Up {
		state = "up"
	}
	return fmt.Sprintf("%s %s mtu %d %s %v", DeviceName, l.Kind, l.MTU, state, l.addrs)
}

func (f *Fake) byIndex(index int) (*fakeLink, error) {
	for _, l := range f.links {
		if l.Index == index {
			return l, nil
		}
	}
	return nil, unix.ENODEV
}

// Link implements Handle.
func (f *Fake) Link(name string) (*Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l := f.links[name]; l != nil {
		c := l.Link
		return &c, nil
	}
	return nil, nil
}

// AddIPIP implements Handle.
func (f *Fake) AddIPIP(name string, mtu int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, fmt.Sprintf("link add %s type ipip mtu %d", name, mtu))
	switch {
	case f.NoDriver:
		return ErrNoDriver
	case f.links[name] != nil:
		return unix.EEXIST
	}
	f.links[name] = &fakeLink{Link: Link{Index: f.next, Kind: "ipip", MTU: mtu}, name: name}
	f.next++
	return nil
}

// SetMTU implements Handle.
func (f *Fake) SetMTU(index, mtu int) error {
	return f.change(index, "link set %s mtu %d", mtu, func(l *fakeLink) { l.MTU = mtu })
}

// SetUp implements Handle.
func (f *Fake) SetUp(index int) error {
	return f.change(index, "link set %s up", nil, func(l *fakeLink) { l.Up = true })
}

// Addrs implements Handle.
func (f *Fake) Addrs(_ context.Context, index int) ([]netip.Prefix, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.byIndex(index)
	if err != nil {
		return nil, err
	}
	return slices.Clone(l.addrs), nil
}

// AddAddr implements Handle.
func (f *Fake) AddAddr(index int, p netip.Prefix) error {
	return f.change(index, "addr add %[2]s dev %[1]s", p, func(l *fakeLink) {
		if !slices.Contains(l.addrs, p) {
			l.addrs = append(l.addrs, p)
		}
	})
}

// DelAddr implements Handle.
func (f *Fake) DelAddr(index int, p netip.Prefix) error {
	return f.change(index, "addr del %[2]s dev %[1]s", p, func(l *fakeLink) {
		l.addrs = slices.DeleteFunc(l.addrs, func(a netip.Prefix) bool { return a == p })
	})
}

// change records a request on the link with index and applies fn to it.
func (f *Fake) change(index int, format string, arg any, fn func(*fakeLink)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.byIndex(index)
	if err != nil {
		return err
	}
	if arg == nil {
		f.requests = append(f.requests, fmt.Sprintf(format, l.name))
	} else {
		f.requests = append(f.requests, fmt.Sprintf(format, l.name, arg))
	}
	fn(l)
	return nil
}
