package startup

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"sort"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// Autodetection method names, spelled as in Project Calico.
const (
	MethodFirstFound    = "first-found"
	MethodCanReach      = "can-reach"
	MethodInterface     = "interface"
	MethodSkipInterface = "skip-interface"
	MethodCIDR          = "cidr"
)

// DefaultInterfaceExclusions are the interfaces first-found and skip-interface= never pick
// (Project Calico's autodetection_linux.go).
var DefaultInterfaceExclusions = []string{
	"^docker.*", "^cbr.*", "^dummy.*", "^podman.*", "^virbr.*", "^lxcbr.*", "^veth.*", "^lo",
	"^br-.*", "^cali.*", "^tunl.*", "^flannel.*", "^kube-ipvs.*", "^cni.*", `^vxlan\.calico.*`,
	`^vxlan-v6\.calico.*`, `^wireguard\.cali.*`, `^wg-v6\.cali.*`, "^nodelocaldns.*",
}

var defaultExclude = joinRegexps(DefaultInterfaceExclusions)

// Method is a parsed IP autodetection method.
type Method struct {
	Name    string
	Include *regexp.Regexp // interface=: only these interfaces (no default exclusions)
	Exclude *regexp.Regexp // first-found, skip-interface=: never these interfaces
	CIDRs   []netip.Prefix // cidr=: only addresses inside these
	Target  string         // can-reach=: an address or host name
	text    string
}

func (m Method) String() string { return m.text }

var listSep = regexp.MustCompile(`\s*,\s*`)

// ParseMethod parses IP_AUTODETECTION_METHOD / IP6_AUTODETECTION_METHOD. An empty string is
// first-found.
func ParseMethod(s string) (Method, error) {
	name, arg, hasArg := strings.Cut(s, "=")
	m := Method{Name: name, text: s}
	switch {
	case s == "" || s == MethodFirstFound:
		m.Name, m.text, m.Exclude = MethodFirstFound, MethodFirstFound, defaultExclude
		return m, nil
	case !hasArg:
		if name == "kubernetes-internal-ip" {
			return m, errors.New("kubernetes-internal-ip needs Kubernetes, which calico-host does not use")
		}
		return m, fmt.Errorf("unknown autodetection method (use first-found, can-reach=<address>, interface=<regex>, skip-interface=<regex> or cidr=<cidr>)")
	case strings.TrimSpace(arg) == "":
		return m, fmt.Errorf("%s= needs a value", name)
	}
	var err error
	switch name {
	case MethodCanReach:
		m.Target = strings.TrimSpace(arg)
	case MethodInterface:
		m.Include, err = compileList(arg)
	case MethodSkipInterface:
		if _, err = compileList(arg); err == nil {
			all := append(append([]string{}, DefaultInterfaceExclusions...), listSep.Split(strings.TrimSpace(arg), -1)...)
			m.Exclude = joinRegexps(all)
		}
	case MethodCIDR:
		m.CIDRs, err = parseCIDRList(arg)
	default:
		err = fmt.Errorf("unknown autodetection method %q (use first-found, can-reach=, interface=, skip-interface= or cidr=)", name)
	}
	return m, err
}

func compileList(arg string) (*regexp.Regexp, error) {
	parts := listSep.Split(strings.TrimSpace(arg), -1)
	for _, p := range parts {
		if _, err := regexp.Compile(p); err != nil {
			return nil, fmt.Errorf("invalid interface regex %q: %w", p, err)
		}
	}
	return joinRegexps(parts), nil
}

// joinRegexps builds one regex matching any of the given ones (each already checked).
func joinRegexps(parts []string) *regexp.Regexp {
	return regexp.MustCompile("(" + strings.Join(parts, ")|(") + ")")
}

func parseCIDRList(arg string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range listSep.Split(strings.TrimSpace(arg), -1) {
		c, err := netip.ParsePrefix(p)
		if err != nil {
			return nil, fmt.Errorf("invalid CIDR %q", p)
		}
		out = append(out, c.Masked())
	}
	return out, nil
}

// Detection is the result of autodetection: the chosen address (with the prefix length of its
// interface) and the interface that holds it.
type Detection struct {
	Interface string
	Addr      netip.Prefix
}

// Detect picks this host's address of family f with the method. ifaces is the host's interface
// list in index order (as Kernel.Interfaces returns it).
func (m Method) Detect(ctx context.Context, k Kernel, ifaces []Interface, f Family) (Detection, error) {
	if m.Name == MethodCanReach {
		return m.detectByReach(ctx, k, ifaces, f)
	}
	// Scan in reverse index order, as Project Calico does.
	for i := len(ifaces) - 1; i >= 0; i-- {
		iface := ifaces[i]
		if !m.selects(iface.Name) {
			continue
		}
		for _, a := range iface.Addrs {
			if f.Contains(a.Addr()) && a.Addr().IsGlobalUnicast() && m.inCIDRs(a.Addr()) {
				return Detection{Interface: iface.Name, Addr: a}, nil
			}
		}
	}
	return Detection{}, fmt.Errorf("no %s address found on the host interfaces with method %s", f, m)
}

func (m Method) selects(name string) bool {
	if m.Include != nil && !m.Include.MatchString(name) {
		return false
	}
	return m.Exclude == nil || !m.Exclude.MatchString(name)
}

func (m Method) inCIDRs(a netip.Addr) bool {
	if len(m.CIDRs) == 0 {
		return true
	}
	for _, c := range m.CIDRs {
		if c.Contains(a) {
			return true
		}
	}
	return false
}

// detectByReach finds the source address the kernel would use towards the target and returns it
// with the prefix length of the interface that holds it.
func (m Method) detectByReach(ctx context.Context, k Kernel, ifaces []Interface, f Family) (Detection, error) {
	dst, err := resolveTarget(ctx, m.Target, f)
	if err != nil {
		return Detection{}, err
	}
	src, err := k.RouteSource(dst)
	if err != nil {
		return Detection{}, fmt.Errorf("finding the route to %s: %w", dst, err)
	}
	if d, ok := findAddr(ifaces, src); ok {
		return d, nil
	}
	return Detection{}, fmt.Errorf("source address %s towards %s is not on any local interface", src, dst)
}

func resolveTarget(ctx context.Context, target string, f Family) (netip.Addr, error) {
	if a, err := netip.ParseAddr(target); err == nil {
		if !f.Contains(a) {
			return netip.Addr{}, fmt.Errorf("can-reach target %s is not an %s address", target, f)
		}
		return a.Unmap(), nil
	}
	network := "ip4"
	if f == V6 {
		network = "ip6"
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, network, target)
	if err != nil || len(addrs) == 0 {
		return netip.Addr{}, fmt.Errorf("resolving can-reach target %q: %v", target, err)
	}
	return addrs[0].Unmap(), nil
}

// findAddr finds the interface address equal to a.
func findAddr(ifaces []Interface, a netip.Addr) (Detection, bool) {
	for _, iface := range ifaces {
		for _, p := range iface.Addrs {
			if p.Addr() == a {
				return Detection{Interface: iface.Name, Addr: p}, true
			}
		}
	}
	return Detection{}, false
}

// nodeInterfaces builds Node spec.interfaces: every interface not excluded by default, sorted by
// name, with its addresses of the given families.
func nodeInterfaces(ifaces []Interface, fams map[Family]bool) []api.NodeInterface {
	var out []api.NodeInterface
	for _, iface := range ifaces {
		if defaultExclude.MatchString(iface.Name) {
			continue
		}
		ni := api.NodeInterface{Name: iface.Name}
		for _, a := range iface.Addrs {
			if fams[familyOf(a.Addr())] {
				ni.Addresses = append(ni.Addresses, a.Addr().String())
			}
		}
		out = append(out, ni)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
