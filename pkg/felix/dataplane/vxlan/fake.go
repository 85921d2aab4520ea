package vxlan

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

// Fake is an in-memory Handle: interfaces with addresses and permanent neighbour entries, with the
// kernel's errors for missing objects (ENODEV, ENOENT, EADDRNOTAVAIL, EEXIST). Deleting a link
// deletes its addresses and neighbours.
type Fake struct {
	mu        sync.Mutex
	links     map[int]*fakeLink
	nextIndex int
	// Writes counts every change made through the Handle; Reads counts listings.
	Writes, Reads int
}

type fakeLink struct {
	Link
	addrs []netip.Prefix
	arp   map[netip.Addr]hwAddr
	fdb   map[hwAddr]netip.Addr
}

// NewFake returns a Fake with only lo.
func NewFake() *Fake {
	f := &Fake{links: map[int]*fakeLink{}, nextIndex: 1}
	f.AddLink("lo", "loopback")
	return f
}

// AddLink creates an up interface of some kind with the given addresses.
func (f *Fake) AddLink(name, kind string, addrs ...netip.Prefix) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.newLink(Link{Name: name, Kind: kind, Up: true, MTU: 1500})
	l.addrs = slices.Clone(addrs)
	return l.Index
}

func (f *Fake) newLink(l Link) *fakeLink {
	l.Index = f.nextIndex
	f.nextIndex++
	fl := &fakeLink{Link: l, arp: map[netip.Addr]hwAddr{}, fdb: map[hwAddr]netip.Addr{}}
	f.links[l.Index] = fl
	return fl
}

func (f *Fake) byName(name string) *fakeLink {
	for _, l := range f.links {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// Mutate changes an interface behind the Manager's back (drift).
func (f *Fake) Mutate(name string, fn func(l *Link, addrs *[]netip.Prefix, neighbors *[]Neigh)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.byName(name)
	ns := l.neighbors()
	fn(&l.Link, &l.addrs, &ns)
	l.arp, l.fdb = map[netip.Addr]hwAddr{}, map[hwAddr]netip.Addr{}
	for _, n := range ns {
		l.set(n)
	}
}

func (l *fakeLink) neighbors() []Neigh {
	var out []Neigh
	for ip, mac := range l.arp {
		out = append(out, Neigh{IP: ip, MAC: mac.mac()})
	}
	for mac, ip := range l.fdb {
		out = append(out, Neigh{FDB: true, IP: ip, MAC: mac.mac()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func (l *fakeLink) set(n Neigh) {
	mac, _ := toHW(n.MAC)
	if n.FDB {
		l.fdb[mac] = n.IP
	} else {
		l.arp[n.IP] = mac
	}
}

// Dump describes an interface and its neighbours, one fact per line, or nil if it does not exist.
func (f *Fake) Dump(name string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.byName(name)
	if l == nil {
		return nil
	}
	out := []string{fmt.Sprintf("%s %s vni %d port %d learning %v parent %d src %s mtu %d mac %s up %v",
		l.Name, l.Kind, l.VNI, l.Port, l.Learning, l.ParentIndex, l.SrcAddr, l.MTU, l.MAC, l.Up)}
	for _, a := range l.addrs {
		out = append(out, "addr "+a.String())
	}
	for _, n := range l.neighbors() {
		out = append(out, n.String())
	}
	return out
}

// Link implements Handle.
func (f *Fake) Link(name string) (*Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Reads++
	if l := f.byName(name); l != nil {
		c := l.Link
		c.MAC = bytes.Clone(l.MAC)
		return &c, nil
	}
	return nil, nil
}

// LinkWithAddr implements Handle.
func (f *Fake) LinkWithAddr(_ context.Context, addr netip.Addr) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Reads++
	for _, l := range f.links {
		for _, p := range l.addrs {
			if p.Addr() == addr {
				return l.Index, nil
			}
		}
	}
	return 0, nil
}

// AddVXLAN implements Handle.
func (f *Fake) AddVXLAN(l Link) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Writes++
	if f.byName(l.Name) != nil {
		return unix.EEXIST
	}
	if _, ok := f.links[l.ParentIndex]; l.ParentIndex != 0 && !ok {
		return unix.ENODEV
	}
	l.Kind, l.Up, l.MAC = "vxlan", false, bytes.Clone(l.MAC)
	f.newLink(l)
	return nil
}

func (f *Fake) change(index int, fn func(l *fakeLink) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Writes++
	l, ok := f.links[index]
	if !ok {
		return unix.ENODEV
	}
	return fn(l)
}

// DeleteLink implements Handle.
func (f *Fake) DeleteLink(index int) error {
	return f.change(index, func(l *fakeLink) error { delete(f.links, index); return nil })
}

// SetMTU implements Handle.
func (f *Fake) SetMTU(index, mtu int) error {
	return f.change(index, func(l *fakeLink) error { l.MTU = mtu; return nil })
}

// SetMAC implements Handle.
func (f *Fake) SetMAC(index int, mac net.HardwareAddr) error {
	return f.change(index, func(l *fakeLink) error { l.MAC = bytes.Clone(mac); return nil })
}

// SetUp implements Handle.
func (f *Fake) SetUp(index int) error {
	return f.change(index, func(l *fakeLink) error { l.Up = true; return nil })
}

// Addrs implements Handle.
func (f *Fake) Addrs(_ context.Context, index int, ipv6 bool) ([]netip.Prefix, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Reads++
	l, ok := f.links[index]
	if !ok {
		return nil, unix.ENODEV
	}
	var out []netip.Prefix
	for _, p := range l.addrs {
		if p.Addr().Is6() == ipv6 && !(ipv6 && p.Addr().IsLinkLocalUnicast()) {
			out = append(out, p)
		}
	}
	return out, nil
}

// AddAddr implements Handle.
func (f *Fake) AddAddr(index int, p netip.Prefix) error {
	return f.change(index, func(l *fakeLink) error {
		if !slices.Contains(l.addrs, p) {
			l.addrs = append(l.addrs, p)
		}
		return nil
	})
}

// DelAddr implements Handle.
func (f *Fake) DelAddr(index int, p netip.Prefix) error {
	return f.change(index, func(l *fakeLink) error {
		i := slices.Index(l.addrs, p)
		if i < 0 {
			return unix.EADDRNOTAVAIL
		}
		l.addrs = slices.Delete(l.addrs, i, i+1)
		return nil
	})
}

// Neighbors implements Handle.
func (f *Fake) Neighbors(_ context.Context, index int, fdb, ipv6 bool) ([]Neigh, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Reads++
	l, ok := f.links[index]
	if !ok {
		return nil, unix.ENODEV
	}
	var out []Neigh
	for _, n := range l.neighbors() {
		if n.FDB == fdb && n.IP.Is6() == ipv6 {
			out = append(out, n)
		}
	}
	return out, nil
}

// SetNeighbor implements Handle.
func (f *Fake) SetNeighbor(index int, n Neigh) error {
	return f.change(index, func(l *fakeLink) error {
		if _, ok := toHW(n.MAC); !ok || !n.IP.IsValid() {
			return unix.EINVAL
		}
		l.set(n)
		return nil
	})
}

// DelNeighbor implements Handle.
func (f *Fake) DelNeighbor(index int, n Neigh) error {
	return f.change(index, func(l *fakeLink) error {
		mac, _ := toHW(n.MAC)
		if n.FDB {
			if ip, ok := l.fdb[mac]; !ok || ip != n.IP {
				return unix.ENOENT
			}
			delete(l.fdb, mac)
			return nil
		}
		if _, ok := l.arp[n.IP]; !ok {
			return unix.ENOENT
		}
		delete(l.arp, n.IP)
		return nil
	})
}
