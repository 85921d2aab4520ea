package nft

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// addrListMatch is `ip saddr { 10.65.0.0/16, 198.18.0.1 }`: the address is
// in any of the prefixes (an anonymous interval set). The prefixes are kept
// as canonical text (merged, sorted) so the value stays comparable.
type addrListMatch struct {
	noRefs
	dst  bool
	fam  Family
	list string // canonical elements, comma separated
	neg  bool
	bad  string // why the list cannot be used (empty when it can)
}

// SAddrIn matches when the source address is in any of the prefixes, all of
// family f: `ip saddr { 10.65.0.0/16, 198.18.0.1 }`. Overlapping and
// adjacent prefixes are merged. Not(SAddrIn(...)) is in none of them.
func SAddrIn(f Family, prefixes ...netip.Prefix) Match { return newAddrList(false, f, prefixes) }

// DAddrIn is SAddrIn for the destination address.
func DAddrIn(f Family, prefixes ...netip.Prefix) Match { return newAddrList(true, f, prefixes) }

func newAddrList(dst bool, f Family, prefixes []netip.Prefix) addrListMatch {
	m := addrListMatch{dst: dst, fam: f}
	if len(prefixes) == 0 {
		m.bad = "address list without addresses"
		return m
	}
	raw := make([]string, len(prefixes))
	for i, p := range prefixes {
		if !p.IsValid() || familyOfLen(p.Addr().BitLen()/8) != f {
			m.bad = fmt.Sprintf("prefix %s is not a valid %s prefix", p, f)
			return m
		}
		raw[i] = p.Masked().String()
	}
	t, _ := parseSetType(f.addrType())
	elems, err := normalizeElements(t, true, raw)
	if err != nil {
		m.bad = err.Error()
		return m
	}
	m.list = strings.Join(elementTexts(elems), ",")
	return m
}

func (m addrListMatch) negate() Match { m.neg = !m.neg; return m }

func (m addrListMatch) field() Field {
	if m.dst {
		return FieldDAddr(m.fam)
	}
	return FieldSAddr(m.fam)
}

func (m addrListMatch) String() string {
	v := m.list
	if strings.Contains(v, ",") {
		v = "{ " + strings.ReplaceAll(v, ",", ", ") + " }"
	}
	return m.field().String() + " " + negOp(m.neg) + v
}

func (m addrListMatch) encode(e *encoder) {
	if p, err := netip.ParsePrefix(m.list); err == nil && m.bad == "" {
		addrMatch{dst: m.dst, prefix: p, neg: m.neg}.encode(e) // one CIDR: a comparison, no set
		return
	}
	if a, err := netip.ParseAddr(m.list); err == nil && m.bad == "" {
		addrMatch{dst: m.dst, prefix: netip.PrefixFrom(a, a.BitLen()), neg: m.neg}.encode(e)
		return
	}
	t, _ := parseSetType(m.fam.addrType())
	elems, err := normalizeElements(t, true, strings.Split(m.list, ","))
	if err != nil || m.bad != "" {
		e.fail(errors.Join(err, m.check()))
		return
	}
	loadFields(e, []Field{m.field()})
	e.add(e.addAnonSet(t, true, elems, m.neg))
}

func (m addrListMatch) check() error {
	if m.bad != "" {
		return errors.New(m.bad)
	}
	return checkFields([]Field{m.field()})
}
