package config

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

func lower(s string) string { return strings.ToLower(s) }
func upper(s string) string { return strings.ToUpper(s) }

// isNone reports whether raw is the keyword that forces an empty value.
func isNone(raw string) bool { return strings.EqualFold(strings.TrimSpace(raw), "none") }

// Parse parses a raw value into the Go type of the parameter's Config field.
func (p *Param) Parse(raw string) (any, error) {
	raw = strings.TrimSpace(raw)
	switch p.Kind {
	case KindBool:
		return parseBool(raw)
	case KindOptBool:
		b, err := parseBool(raw)
		if err != nil {
			return nil, err
		}
		return &b, nil
	case KindInt:
		return p.parseInt(raw)
	case KindUint32:
		return p.parseUint32(raw)
	case KindString:
		return p.parseString(raw)
	case KindOneOf:
		return p.parseOneOf(raw)
	case KindSeconds:
		return parseSeconds(raw)
	case KindList:
		return parseList(raw), nil
	case KindPorts:
		return ParsePorts(raw)
	case KindAddr:
		a, err := parseAddr(raw)
		if err == nil && a.IsValid() && p.Check != nil {
			err = p.Check(a.String())
		}
		if err != nil {
			return netip.Addr{}, err
		}
		return a, nil
	case KindPortRange:
		return parsePortRange(raw)
	case KindTableRanges:
		return p.parseTableRanges(raw)
	}
	return nil, fmt.Errorf("parameter %s has unknown kind %d", p.Name, p.Kind)
}

func parseBool(raw string) (bool, error) {
	switch lower(raw) {
	case "true", "1", "yes", "y", "t":
		return true, nil
	case "false", "0", "no", "n", "f":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (use true or false)", raw)
}

func (p *Param) parseInt(raw string) (int, error) {
	n, err := strconv.ParseInt(raw, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", raw)
	}
	if n < int64(p.Min) || n > int64(p.Max) {
		return 0, fmt.Errorf("%d is outside %d..%d", n, p.Min, p.Max)
	}
	return int(n), nil
}

func (p *Param) parseUint32(raw string) (uint32, error) {
	n, err := strconv.ParseUint(raw, 0, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a 32-bit unsigned integer", raw)
	}
	if p.Check != nil {
		if err := p.Check(strconv.FormatUint(n, 10)); err != nil {
			return 0, err
		}
	}
	return uint32(n), nil
}

func (p *Param) parseString(raw string) (string, error) {
	if isNone(raw) {
		return "", nil
	}
	if p.Check != nil {
		if err := p.Check(raw); err != nil {
			return "", err
		}
	}
	return raw, nil
}

func (p *Param) parseOneOf(raw string) (string, error) {
	for _, v := range p.Values {
		if strings.EqualFold(v, raw) {
			return v, nil
		}
	}
	return "", fmt.Errorf("%q is not one of %s", raw, strings.Join(p.Values, ", "))
}

// parseSeconds accepts a Go duration ("30s", "1m30s") or a number of seconds ("30", "0.5").
func parseSeconds(raw string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(raw, 64); err == nil {
		if f < 0 || math.IsNaN(f) || f > math.MaxInt64/float64(time.Second) {
			return 0, fmt.Errorf("%q is not a valid number of seconds", raw)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (use seconds, e.g. 30, or 30s)", raw)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", raw)
	}
	return d, nil
}

func parseList(raw string) []string {
	if isNone(raw) {
		return []string{}
	}
	out := []string{}
	for _, s := range strings.Split(raw, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func parseAddr(raw string) (netip.Addr, error) {
	if isNone(raw) {
		return netip.Addr{}, nil
	}
	a, err := netip.ParseAddr(raw)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%q is not an IP address", raw)
	}
	return a, nil
}

// checkIPv4 and checkIPv6 accept an address of their family only.
func checkIPv4(s string) error {
	if a, err := netip.ParseAddr(s); err != nil || !a.Is4() {
		return fmt.Errorf("%q is not an IPv4 address", s)
	}
	return nil
}

func checkIPv6(s string) error {
	if a, err := netip.ParseAddr(s); err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
		return fmt.Errorf("%q is not an IPv6 address", s)
	}
	return nil
}

func parsePortRange(raw string) ([2]uint16, error) {
	lo, hi, found := strings.Cut(raw, ":")
	if !found {
		hi = lo
	}
	a, err1 := strconv.ParseUint(lo, 10, 16)
	b, err2 := strconv.ParseUint(hi, 10, 16)
	if err1 != nil || err2 != nil || a == 0 || a > b {
		return [2]uint16{}, fmt.Errorf("%q is not a port range (min:max, 1-65535)", raw)
	}
	return [2]uint16{uint16(a), uint16(b)}, nil
}

// ParsePorts parses a failsafe port list: comma-separated entries "<port>", "<proto>:<port>" or
// "<proto>:<net>:<port>", with IPv6 nets in brackets ("tcp:[fd00::/8]:22"). The protocol defaults
// to tcp. "none" is the empty list.
func ParsePorts(raw string) ([]dataplane.ProtoPort, error) {
	out := []dataplane.ProtoPort{}
	if isNone(raw) {
		return out, nil
	}
	for _, entry := range strings.Split(raw, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		pp, err := parsePortEntry(entry)
		if err != nil {
			return nil, fmt.Errorf("failsafe port %q: %w", entry, err)
		}
		out = append(out, pp)
	}
	return out, nil
}

func parsePortEntry(entry string) (dataplane.ProtoPort, error) {
	pp := dataplane.ProtoPort{Protocol: "tcp"}
	rest := entry
	if proto, r, ok := strings.Cut(rest, ":"); ok && !strings.HasPrefix(rest, "[") {
		if _, err := strconv.Atoi(proto); err == nil {
			return pp, errors.New("want [proto:][net:]port")
		}
		pp.Protocol, rest = lower(proto), r
	}
	switch pp.Protocol {
	case "tcp", "udp", "sctp":
	default:
		return pp, fmt.Errorf("protocol %q is not tcp, udp or sctp", pp.Protocol)
	}
	if i := strings.LastIndex(rest, ":"); i >= 0 {
		netStr := strings.TrimSuffix(strings.TrimPrefix(rest[:i], "["), "]")
		pfx, err := parseNet(netStr)
		if err != nil {
			return pp, err
		}
		pp.Net, rest = pfx, rest[i+1:]
	}
	port, err := strconv.ParseUint(rest, 10, 16)
	if err != nil || port == 0 {
		return pp, fmt.Errorf("port %q is not 1-65535", rest)
	}
	pp.Port = uint16(port)
	return pp, nil
}

func parseNet(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.Prefix{}, fmt.Errorf("%q is not an IP network", s)
}

// FormatPorts renders a failsafe port list in the syntax ParsePorts reads.
func FormatPorts(ports []dataplane.ProtoPort) string {
	if len(ports) == 0 {
		return "none"
	}
	parts := make([]string, len(ports))
	for i, p := range ports {
		switch {
		case !p.Net.IsValid():
			parts[i] = fmt.Sprintf("%s:%d", p.Protocol, p.Port)
		case p.Net.Addr().Is6():
			parts[i] = fmt.Sprintf("%s:[%s]:%d", p.Protocol, p.Net, p.Port)
		default:
			parts[i] = fmt.Sprintf("%s:%s:%d", p.Protocol, p.Net, p.Port)
		}
	}
	return strings.Join(parts, ",")
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,44}[a-z0-9])?$`)

// checkRegion accepts what networking-calico accepts: a lower-case DNS label of at most 46 chars.
func checkRegion(s string) error {
	if !dnsLabel.MatchString(s) {
		return fmt.Errorf("%q is not a lower-case DNS label of at most 46 characters", s)
	}
	return nil
}

var hostnameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)

func checkHostname(s string) error {
	if !hostnameRE.MatchString(s) {
		return fmt.Errorf("%q is not a valid lower-case node name", s)
	}
	return nil
}

// checkMarkMask needs at least the 5 bits felix allocates (accept, pass, drop, two scratch).
func checkMarkMask(s string) error {
	n, _ := strconv.ParseUint(s, 10, 32)
	bits := 0
	for ; n != 0; n &= n - 1 {
		bits++
	}
	if bits < 5 {
		return fmt.Errorf("mark mask needs at least 5 bits, has %d", bits)
	}
	return nil
}

var ifaceNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,15}$`)

// checkIfaceName accepts a Linux interface name (at most 15 characters, no slash or space).
func checkIfaceName(s string) error {
	if !ifaceNameRE.MatchString(s) || s == "." || s == ".." {
		return fmt.Errorf("%q is not a valid interface name", s)
	}
	return nil
}
