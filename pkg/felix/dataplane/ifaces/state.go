package ifaces

import (
	"net/netip"
	"slices"
)

// State is one interface as the monitor last saw it.
type State struct {
	Name  string
	Index int
	// Up is admin up and lower up (IFF_UP and IFF_RUNNING): oper state up, or unknown for
	// devices that do not report one.
	Up    bool
	Addrs []netip.Prefix // every address on the interface (link-local included), sorted
	MTU   int
}

func (s *State) clone() *State {
	c := *s
	c.Addrs = slices.Clone(s.Addrs)
	return &c
}

func (s *State) equal(o *State) bool {
	return s.Name == o.Name && s.Index == o.Index && s.Up == o.Up && s.MTU == o.MTU &&
		slices.Equal(s.Addrs, o.Addrs)
}

// Update reports one interface: its full state, or State nil when it was deleted (or renamed away
// from Name). An Update with InSync set (and no Name) follows the initial listing and every
// periodic resync: every interface that exists has been reported.
type Update struct {
	Name   string
	State  *State
	InSync bool
}

// EventKind says what an Event reports.
type EventKind int

// Event kinds.
const (
	LinkChanged EventKind = iota // Link holds the interface (Addrs empty)
	LinkDeleted                  // Link.Index (and Name) identify the interface
	AddrAdded                    // Index and Addr
	AddrDeleted                  // Index and Addr
)

// Event is one kernel notification.
type Event struct {
	Kind  EventKind
	Link  State
	Index int
	Addr  netip.Prefix
}

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

func sortPrefixes(ps []netip.Prefix) {
	slices.SortFunc(ps, comparePrefix)
}

// withAddr returns addrs plus p (sorted, no duplicate), and whether it changed.
func withAddr(addrs []netip.Prefix, p netip.Prefix) ([]netip.Prefix, bool) {
	i, found := slices.BinarySearchFunc(addrs, p, comparePrefix)
	if found {
		return addrs, false
	}
	return slices.Insert(slices.Clone(addrs), i, p), true
}

// withoutAddr returns addrs minus p, and whether it changed.
func withoutAddr(addrs []netip.Prefix, p netip.Prefix) ([]netip.Prefix, bool) {
	i, found := slices.BinarySearchFunc(addrs, p, comparePrefix)
	if !found {
		return addrs, false
	}
	return slices.Delete(slices.Clone(addrs), i, i+1), true
}
