package nft

import (
	"encoding/binary"
	"slices"
	"strconv"
	"strings"

	"github.com/google/nftables/expr"
)

// PortRange is an inclusive range of ports; a single port has First == Last.
type PortRange struct{ First, Last uint16 }

// Port is the range holding only port p.
func Port(p uint16) PortRange { return PortRange{p, p} }

// Ports is the range first-last.
func Ports(first, last uint16) PortRange { return PortRange{first, last} }

func (r PortRange) String() string {
	if r.First == r.Last {
		return strconv.Itoa(int(r.First))
	}
	return strconv.Itoa(int(r.First)) + "-" + strconv.Itoa(int(r.Last))
}

// portMatch is `tcp dport 80`, `udp sport 1000-2000` or
// `tcp dport { 80, 443, 1000-2000 }`. The ranges are kept as canonical text
// (sorted, merged) so the value stays comparable.
type portMatch struct {
	noRefs
	field  Field
	ranges string
	neg    bool
}

// SPort matches the source port of proto (ProtoTCP, ProtoUDP, ProtoSCTP,
// ProtoUDPLite, or 0 for `th`, any protocol) against one or more ports and
// ranges. Several ranges become an anonymous set.
func SPort(proto uint8, ports ...PortRange) Match {
	return portMatch{field: FieldSPort(proto), ranges: canonicalPorts(ports)}
}

// DPort matches the destination port; see SPort.
func DPort(proto uint8, ports ...PortRange) Match {
	return portMatch{field: FieldDPort(proto), ranges: canonicalPorts(ports)}
}

func (m portMatch) negate() Match { m.neg = !m.neg; return m }

func (m portMatch) String() string {
	v := m.ranges
	if strings.Contains(v, ",") {
		v = "{ " + strings.ReplaceAll(v, ",", ", ") + " }"
	}
	return m.field.String() + " " + negOp(m.neg) + v
}

func (m portMatch) encode(e *encoder) {
	ranges := parsePorts(m.ranges)
	loadFields(e, []Field{m.field})
	switch {
	case len(ranges) == 0:
		e.fail(errNoPorts)
	case len(ranges) > 1:
		t, _ := parseSetType(TypeInetService)
		elems := make([]element, len(ranges))
		for i, r := range ranges {
			elems[i] = spanElement(t.fields[0], span{lo: be16(r.First), hi: be16(r.Last)})
		}
		e.add(e.addAnonSet(t, true, elems, m.neg))
	case ranges[0].First == ranges[0].Last:
		e.cmp(cmpOp(m.neg), be16(ranges[0].First))
	default:
		e.add(&expr.Range{Op: cmpOp(m.neg), Register: reg1, FromData: be16(ranges[0].First), ToData: be16(ranges[0].Last)})
	}
}

func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

// canonicalPorts sorts and merges ranges and prints them comma-separated.
func canonicalPorts(ports []PortRange) string {
	rs := slices.Clone(ports)
	for i, r := range rs {
		if r.First > r.Last {
			rs[i] = PortRange{r.Last, r.First}
		}
	}
	slices.SortFunc(rs, func(a, b PortRange) int { return int(a.First) - int(b.First) })
	var out []PortRange
	for _, r := range rs {
		if n := len(out); n > 0 && int(r.First) <= int(out[n-1].Last)+1 {
			out[n-1].Last = max(out[n-1].Last, r.Last)
			continue
		}
		out = append(out, r)
	}
	parts := make([]string, len(out))
	for i, r := range out {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// parsePorts reverses canonicalPorts.
func parsePorts(s string) []PortRange {
	if s == "" {
		return nil
	}
	var out []PortRange
	for _, p := range strings.Split(s, ",") {
		lo, hi, ok := strings.Cut(p, "-")
		if !ok {
			hi = lo
		}
		a, _ := strconv.Atoi(lo)
		b, _ := strconv.Atoi(hi)
		out = append(out, PortRange{uint16(a), uint16(b)})
	}
	return out
}
