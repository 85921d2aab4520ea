package api

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Port is a port number, a "min:max" range, or a named port resolved against endpoint ports.
// It marshals as a number when it is a single port, else as a string.
type Port struct {
	MinPort  uint16
	MaxPort  uint16
	PortName string
}

// SinglePort returns a Port for one number.
func SinglePort(p uint16) Port { return Port{MinPort: p, MaxPort: p} }

// NamedPort returns a Port that refers to an endpoint's named port.
func NamedPort(name string) Port { return Port{PortName: name} }

var (
	allDigits     = regexp.MustCompile(`^\d+$`)
	portRange     = regexp.MustCompile(`^(\d+):(\d+)$`)
	portNameChars = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)
)

// ParsePort parses "80", "8000:8080" or a port name, with Project Calico's grammar and messages
// (numorstring.PortFromString). Port 0 parses; writers refuse it (see writePortNumbers).
func ParsePort(s string) (Port, error) {
	if allDigits.MatchString(s) {
		n, err := strconv.ParseUint(s, 10, 16)
		if err != nil {
			return Port{}, fmt.Errorf("invalid port format (%s)", s)
		}
		return SinglePort(uint16(n)), nil
	}
	if m := portRange.FindStringSubmatch(s); m != nil {
		lo, err := strconv.ParseUint(m[1], 10, 16)
		if err != nil {
			return Port{}, fmt.Errorf("invalid minimum port number in range (%s)", s)
		}
		hi, err := strconv.ParseUint(m[2], 10, 16)
		if err != nil {
			return Port{}, fmt.Errorf("invalid maximum port number in range (%s)", s)
		}
		if lo > hi {
			return Port{}, fmt.Errorf("minimum port number (%d) is greater than maximum port number (%d) in port range", lo, hi)
		}
		return Port{MinPort: uint16(lo), MaxPort: uint16(hi)}, nil
	}
	if !portNameChars.MatchString(s) {
		return Port{}, fmt.Errorf("invalid name for named port (%s)", s)
	}
	return NamedPort(s), nil
}

// String renders the port as users write it.
func (p Port) String() string {
	switch {
	case p.PortName != "":
		return p.PortName
	case p.MinPort == p.MaxPort:
		return strconv.Itoa(int(p.MinPort))
	default:
		return fmt.Sprintf("%d:%d", p.MinPort, p.MaxPort)
	}
}

// MarshalJSON renders a single port as a number and anything else as a string.
func (p Port) MarshalJSON() ([]byte, error) {
	if p.PortName == "" && p.MinPort == p.MaxPort {
		return []byte(strconv.Itoa(int(p.MinPort))), nil
	}
	return json.Marshal(p.String())
}

// UnmarshalJSON accepts a number (a uint16, with encoding/json's error otherwise, as Project
// Calico) or a string (see ParsePort).
func (p *Port) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := ParsePort(s)
		if err != nil {
			return err
		}
		*p = v
		return nil
	}
	var n uint16
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*p = SinglePort(n)
	return nil
}

// Protocol is a protocol name (TCP, UDP, ICMP, ICMPv6, SCTP, UDPLite) or a number 1-255.
// It marshals back in the form it was given, except that a numeric string becomes a number.
type Protocol struct {
	Name   string
	Number uint8
	IsNum  bool
}

// ProtocolFromString returns a named protocol (or a number, if s is numeric).
func ProtocolFromString(s string) Protocol {
	if n, err := strconv.ParseUint(s, 10, 8); err == nil {
		return Protocol{Number: uint8(n), IsNum: true}
	}
	return Protocol{Name: s}
}

// ProtocolFromInt returns a numeric protocol.
func ProtocolFromInt(n uint8) Protocol { return Protocol{Number: n, IsNum: true} }

var protocolNumbers = map[string]uint8{
	"tcp": 6, "udp": 17, "icmp": 1, "icmpv6": 58, "sctp": 132, "udplite": 136,
}

// NumberValue returns the IP protocol number, and false for an unknown name.
func (p Protocol) NumberValue() (uint8, bool) {
	if p.IsNum {
		return p.Number, true
	}
	n, ok := protocolNumbers[strings.ToLower(p.Name)]
	return n, ok
}

// SupportsPorts reports whether port matches make sense for this protocol (TCP, UDP, SCTP, UDPLite).
func (p Protocol) SupportsPorts() bool {
	n, _ := p.NumberValue()
	return n == 6 || n == 17 || n == 132 || n == 136
}

// String renders the protocol as it was given.
func (p Protocol) String() string { return byteOrNameText(p.IsNum, p.Number, p.Name) }

// MarshalJSON renders a number or a string, as given.
func (p Protocol) MarshalJSON() ([]byte, error) { return byteOrNameJSON(p.IsNum, p.Number, p.Name) }

// UnmarshalJSON accepts a number or a string. As in Project Calico's numorstring, a string that
// is a number 0-255 ("17", as Neutron stores "--protocol 17") is that number.
func (p *Protocol) UnmarshalJSON(b []byte) error {
	n, s, isNum, err := unmarshalByteOrName(b, "protocol")
	switch {
	case err != nil:
		return err
	case isNum:
		*p = Protocol{Number: n, IsNum: true}
	default:
		*p = ProtocolFromString(s)
	}
	return nil
}

// byteOrNameText is a number-or-name value (protocol, DSCP) as it was given.
func byteOrNameText(isNum bool, n uint8, name string) string {
	if isNum {
		return strconv.Itoa(int(n))
	}
	return name
}

// byteOrNameJSON renders a number-or-name value as a JSON number or string, as given.
func byteOrNameJSON(isNum bool, n uint8, name string) ([]byte, error) {
	if isNum {
		return []byte(strconv.Itoa(int(n))), nil
	}
	return json.Marshal(name)
}

// unmarshalByteOrName decodes a JSON string (s) or a number 0-255 (n, isNum).
func unmarshalByteOrName(b []byte, what string) (n uint8, s string, isNum bool, err error) {
	if len(b) > 0 && b[0] == '"' {
		err = json.Unmarshal(b, &s)
		return 0, s, false, err
	}
	var v int64
	if err := json.Unmarshal(b, &v); err != nil || v < 0 || v > 255 {
		return 0, "", false, fmt.Errorf("%s must be a number 0-255 or a string: %s", what, b)
	}
	return uint8(v), "", true, nil
}

// ASNumber is a BGP AS number. It accepts a number, a numeric string or asdot notation ("1.10").
type ASNumber uint32

// ParseASNumber parses "64512" or asdot "1.10".
func ParseASNumber(s string) (ASNumber, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return ASNumber(n), nil
	}
	hi, lo, ok := strings.Cut(s, ".")
	h, err1 := strconv.ParseUint(hi, 10, 16)
	l, err2 := strconv.ParseUint(lo, 10, 16)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("invalid AS Number format (%s)", s)
	}
	return ASNumber(h<<16 | l), nil
}

// UnmarshalJSON accepts a number (a uint32) or a string (see ParseASNumber). Anything else fails
// as it does in Project Calico, as a value that is not a string ("cannot unmarshal number into Go
// struct field BGPPeerSpec.spec.asNumber of type string").
func (a *ASNumber) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*uint32)(a)); err == nil {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := ParseASNumber(s)
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// Duration is a time.Duration that marshals as Go's duration string ("1m30s"), like
// Kubernetes' metav1.Duration, which Project Calico uses.
type Duration struct {
	time.Duration
}

// MarshalJSON renders the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.Duration.String()) }

// UnmarshalJSON parses a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"30s\": %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// Dur returns a pointer to a Duration.
func Dur(d time.Duration) *Duration { return &Duration{Duration: d} }

// dscpNames maps the DSCP class names Project Calico accepts to their values.
var dscpNames = map[string]uint8{
	"DF": 0, "EF": 46,
	"AF11": 10, "AF12": 12, "AF13": 14, "AF21": 18, "AF22": 20, "AF23": 22,
	"AF31": 26, "AF32": 28, "AF33": 30, "AF41": 34, "AF42": 36, "AF43": 38,
	"CS0": 0, "CS1": 8, "CS2": 16, "CS3": 24, "CS4": 32, "CS5": 40, "CS6": 48,
}

// DSCP is a DSCP value: a number 0-63 or a class name (DF, EF, AF11-AF43, CS0-CS6). Like Project
// Calico's numorstring.DSCP, a numeric string is read as a number; it marshals as a number or as
// the name it was given.
type DSCP struct {
	Name  string
	Value uint8
	IsNum bool
}

// DSCPFromInt returns a numeric DSCP.
func DSCPFromInt(v uint8) DSCP { return DSCP{Value: v, IsNum: true} }

// DSCPFromString returns a named DSCP (or a numeric one, if s is a number 0-255).
func DSCPFromString(s string) DSCP {
	if n, err := strconv.ParseUint(s, 10, 8); err == nil {
		return DSCPFromInt(uint8(n))
	}
	return DSCP{Name: s}
}

// NumberValue returns the 6-bit DSCP value, and false for an unknown name or a number above 63.
func (d DSCP) NumberValue() (uint8, bool) {
	if d.IsNum {
		return d.Value, d.Value <= 63
	}
	v, ok := dscpNames[strings.ToUpper(strings.TrimSpace(d.Name))]
	return v, ok
}

// String renders the DSCP as it was given.
func (d DSCP) String() string { return byteOrNameText(d.IsNum, d.Value, d.Name) }

// MarshalJSON renders a number or a string, as given.
func (d DSCP) MarshalJSON() ([]byte, error) { return byteOrNameJSON(d.IsNum, d.Value, d.Name) }

// UnmarshalJSON accepts a number 0-255 or a string.
func (d *DSCP) UnmarshalJSON(b []byte) error {
	n, s, isNum, err := unmarshalByteOrName(b, "DSCP")
	switch {
	case err != nil:
		return err
	case isNum:
		*d = DSCPFromInt(n)
	default:
		*d = DSCPFromString(s)
	}
	return nil
}
