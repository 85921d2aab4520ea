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

	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
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
		return parseChoice(p.Choices, raw)
	case KindSeconds:
		return parseSeconds(raw)
	case KindList:
		return parseList(raw), nil
	case KindPorts:
		return ParsePorts(raw)
	case KindAddr:
		return p.parseAddr(raw)
	case KindPortRange:
		return parsePortRange(raw)
	case KindTableRanges:
		return p.parseTableRanges(raw)
	case KindRegexp:
		return parseRegexp(raw)
	case KindIfaceRegexps:
		return parseIfaceRegexps(raw)
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

// parseChoice is the Go value of the choice named raw (case-insensitively).
func parseChoice(choices []Choice, raw string) (any, error) {
	for _, c := range choices {
		if strings.EqualFold(c.Name, raw) {
			return c.Value, nil
		}
	}
	return nil, fmt.Errorf("%q is not one of %s", raw, strings.Join(names(choices), ", "))
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

// parseAddr parses an address; "none" is unset (the invalid address).
func (p *Param) parseAddr(raw string) (netip.Addr, error) {
	if isNone(raw) {
		return netip.Addr{}, nil
	}
	a, err := netip.ParseAddr(raw)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%q is not an IP address", raw)
	}
	if p.Check == nil {
		// An address of either family: ::ffff:a.b.c.d is a.b.c.d, as Project Calico's parser
		// (net.IP) takes it (NATOutgoingAddress, IpInIpTunnelAddr). Checked ones refuse it.
		a = a.Unmap()
	}
	if p.Check != nil {
		if err := p.Check(a.String()); err != nil {
			return netip.Addr{}, err
		}
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

func parsePortRange(raw string) (nft.PortRange, error) {
	lo, hi, found := strings.Cut(raw, ":")
	if !found {
		hi = lo
	}
	a, err1 := strconv.ParseUint(lo, 10, 16)
	b, err2 := strconv.ParseUint(hi, 10, 16)
	if err1 != nil || err2 != nil || a == 0 || a > b {
		return nft.PortRange{}, fmt.Errorf("%q is not a port range (min:max, 1-65535)", raw)
	}
	return nft.Ports(uint16(a), uint16(b)), nil
}

// parseRegexp compiles a regular expression.
func parseRegexp(raw string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a regular expression: %w", raw, err)
	}
	return re, nil
}

// parseIfaceRegexps parses a comma-separated list of interface names, each matching that name
// only, and /regex/ patterns, as Project Calico's felix does (one bad entry refuses the value).
// "none" is the empty list.
func parseIfaceRegexps(raw string) ([]*regexp.Regexp, error) {
	out := []*regexp.Regexp{}
	for _, s := range parseList(raw) {
		pattern := "^" + regexp.QuoteMeta(s) + "$"
		if len(s) > 2 && strings.HasPrefix(s, "/") && strings.HasSuffix(s, "/") {
			pattern = s[1 : len(s)-1]
		} else if err := checkIfaceName(s); err != nil {
			return nil, err
		}
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, fmt.Errorf("%q is not a regular expression: %w", s, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// ParsePorts parses a failsafe port list: comma-separated entries "<port>", "<proto>:<port>" or
// "<proto>:<net>:<port>", with IPv6 nets in brackets ("tcp:[fd00::/8]:22"). The protocol defaults
// to tcp. "none" is the empty list.
func ParsePorts(raw string) ([]rules.ProtoPort, error) {
	out := []rules.ProtoPort{}
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

func parsePortEntry(entry string) (rules.ProtoPort, error) {
	pp := rules.ProtoPort{Protocol: nft.ProtoTCP}
	rest := entry
	if proto, r, ok := strings.Cut(rest, ":"); ok && !strings.HasPrefix(rest, "[") {
		if _, err := strconv.Atoi(proto); err == nil {
			return pp, errors.New("want [proto:][net:]port")
		}
		p, err := parseProtocol(proto)
		if err != nil {
			return pp, err
		}
		pp.Protocol, rest = p, r
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

// parseProtocol is a failsafe port's protocol number, from its name (case-insensitive).
func parseProtocol(name string) (uint8, error) {
	v, err := parseChoice(failsafeProtocols, name)
	if err != nil {
		return 0, fmt.Errorf("protocol %q is not tcp, udp or sctp", name)
	}
	return v.(uint8), nil
}

// FormatPorts renders a failsafe port list in the syntax ParsePorts reads.
func FormatPorts(ports []rules.ProtoPort) string {
	if len(ports) == 0 {
		return "none"
	}
	parts := make([]string, len(ports))
	for i, p := range ports {
		proto := strconv.Itoa(int(p.Protocol))
		for _, c := range failsafeProtocols {
			if c.Value == p.Protocol {
				proto = c.Name
			}
		}
		switch {
		case !p.Net.IsValid():
			parts[i] = fmt.Sprintf("%s:%d", proto, p.Port)
		case p.Net.Addr().Is6():
			parts[i] = fmt.Sprintf("%s:[%s]:%d", proto, p.Net, p.Port)
		default:
			parts[i] = fmt.Sprintf("%s:%s:%d", proto, p.Net, p.Port)
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

// checkMarkMask accepts a mask the renderers can allocate their mark bits from.
func checkMarkMask(s string) error {
	n, _ := strconv.ParseUint(s, 10, 32)
	_, err := rules.MarksFromMask(uint32(n))
	return err
}

var ifaceNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,15}$`)

// checkIfaceName accepts a Linux interface name (at most 15 characters, no slash or space).
func checkIfaceName(s string) error {
	if !ifaceNameRE.MatchString(s) || s == "." || s == ".." {
		return fmt.Errorf("%q is not a valid interface name", s)
	}
	return nil
}
