package startup

import (
	"fmt"
	"net/netip"
)

// Family is an IP address family: 4 or 6.
type Family int

// The two families.
const (
	V4 Family = 4
	V6 Family = 6
)

// Families lists both families in order.
var Families = []Family{V4, V6}

func (f Family) String() string { return fmt.Sprintf("IPv%d", int(f)) }

// Contains reports whether a is an address of this family (IPv4-mapped IPv6 counts as IPv4).
func (f Family) Contains(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	return (f == V4) == a.Unmap().Is4()
}

// familyOf returns the family of an address.
func familyOf(a netip.Addr) Family {
	if a.Unmap().Is4() {
		return V4
	}
	return V6
}

// index returns 0 for IPv4 and 1 for IPv6, for arrays indexed by family.
func (f Family) index() int {
	if f == V4 {
		return 0
	}
	return 1
}
