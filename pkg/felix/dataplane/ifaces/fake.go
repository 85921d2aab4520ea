package ifaces

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"sort"
	"sync"
)

// Fake is an in-memory Handle. Its mutators change the interfaces and, unless Quiet is set (a lost
// event), notify the current subscription, link and address events separately as the kernel does.
type Fake struct {
	mu        sync.Mutex
	links     map[int]*State
	nextIndex int
	sub       chan Event
	// Quiet drops events (the monitor must notice at its next listing).
	Quiet bool
	// ListErr, when set, is returned by ListInterfaces.
	ListErr error
	// Neighbors records SetNeighbor calls as "iface ip mac".
	Neighbors []string
	// Subscriptions counts Subscribe calls.
	Subscriptions int
}

// NewFake returns a Fake with lo (index 1, up).
func NewFake() *Fake {
	return &Fake{links: map[int]*State{1: {Name: "lo", Index: 1, Up: true, MTU: 65536}}, nextIndex: 2}
}

// AddLink creates an interface.
func (f *Fake) AddLink(name string, up bool, mtu int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &State{Name: name, Index: f.nextIndex, Up: up, MTU: mtu}
	f.nextIndex++
	f.links[s.Index] = s
	f.notify(Event{Kind: LinkChanged, Link: State{Name: name, Index: s.Index, Up: up, MTU: mtu}})
	return s.Index
}

// SetLink changes an interface's up state and MTU.
func (f *Fake) SetLink(name string, up bool, mtu int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.byName(name)
	s.Up, s.MTU = up, mtu
	f.notify(Event{Kind: LinkChanged, Link: State{Name: name, Index: s.Index, Up: up, MTU: mtu}})
}

// Rename renames an interface.
func (f *Fake) Rename(name, to string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.byName(name)
	s.Name = to
	f.notify(Event{Kind: LinkChanged, Link: State{Name: to, Index: s.Index, Up: s.Up, MTU: s.MTU}})
}

// DelLink deletes an interface (its addresses go with it, silently, as the monitor must assume).
func (f *Fake) DelLink(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.byName(name)
	delete(f.links, s.Index)
	f.notify(Event{Kind: LinkDeleted, Link: State{Name: name, Index: s.Index}})
}

// AddAddr adds an address to an interface.
func (f *Fake) AddAddr(name string, p netip.Prefix) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.byName(name)
	s.Addrs, _ = withAddr(s.Addrs, p)
	f.notify(Event{Kind: AddrAdded, Index: s.Index, Addr: p})
}

// DelAddr removes an address from an interface.
func (f *Fake) DelAddr(name string, p netip.Prefix) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.byName(name)
	s.Addrs, _ = withoutAddr(s.Addrs, p)
	f.notify(Event{Kind: AddrDeleted, Index: s.Index, Addr: p})
}

// Notify sends an arbitrary event (to test reordering).
func (f *Fake) Notify(ev Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notify(ev)
}

// BreakSubscription ends the current subscription, as a socket overflow would.
func (f *Fake) BreakSubscription() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sub != nil {
		close(f.sub)
		f.sub = nil
	}
}

func (f *Fake) byName(name string) *State {
	for _, s := range f.links {
		if s.Name == name {
			return s
		}
	}
	panic(fmt.Sprintf("fake: no interface %q", name))
}

func (f *Fake) notify(ev Event) {
	if f.Quiet || f.sub == nil {
		return
	}
	select {
	case f.sub <- ev:
	default: // overflow: the subscription breaks, as with ENOBUFS
		close(f.sub)
		f.sub = nil
	}
}

// ListInterfaces implements Handle.
func (f *Fake) ListInterfaces(context.Context) ([]State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ListErr != nil {
		return nil, f.ListErr
	}
	out := make([]State, 0, len(f.links))
	for _, s := range f.links {
		out = append(out, *s.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// Subscribe implements Handle; a new subscription replaces the previous one.
func (f *Fake) Subscribe(ctx context.Context) (<-chan Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Subscriptions++
	if f.sub != nil {
		close(f.sub)
	}
	ch := make(chan Event, 1024)
	f.sub = ch
	go func() {
		<-ctx.Done()
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.sub == ch {
			close(ch)
			f.sub = nil
		}
	}()
	return ch, nil
}

// SetNeighbor implements Handle.
func (f *Fake) SetNeighbor(iface string, ip netip.Addr, mac net.HardwareAddr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.links {
		if s.Name == iface {
			f.Neighbors = append(f.Neighbors, fmt.Sprintf("%s %s %s", iface, ip, mac))
			return nil
		}
	}
	return fmt.Errorf("finding interface %s: link not found", iface)
}

// FakeSysctl is an in-memory SysctlWriter. Writes to paths under an interface that Missing names
// fail with fs.ErrNotExist, like /proc/sys for an interface that does not exist.
type FakeSysctl struct {
	mu      sync.Mutex
	Values  map[string]string
	Missing map[string]bool // interface names (or "net/ipv6" for a kernel without IPv6)
	Writes  []string        // "path=value" in order
}

// NewFakeSysctl returns an empty FakeSysctl.
func NewFakeSysctl() *FakeSysctl {
	return &FakeSysctl{Values: map[string]string{}, Missing: map[string]bool{}}
}

// WriteSysctl implements SysctlWriter.
func (f *FakeSysctl) WriteSysctl(path, value string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for m := range f.Missing {
		if containsSegment(path, m) {
			return &fs.PathError{Op: "open", Path: "/proc/sys/" + path, Err: fs.ErrNotExist}
		}
	}
	f.Values[path] = value
	f.Writes = append(f.Writes, path+"="+value)
	return nil
}

func containsSegment(path, seg string) bool {
	for i := 0; i+len(seg) <= len(path); i++ {
		if path[i:i+len(seg)] == seg && (i == 0 || path[i-1] == '/') &&
			(i+len(seg) == len(path) || path[i+len(seg)] == '/') {
			return true
		}
	}
	return false
}
