package dataplane

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// Project Calico's defaults (felix-facts §4).
var (
	defaultFailsafeInbound = []ProtoPort{
		{Protocol: "tcp", Port: 22}, {Protocol: "udp", Port: 68}, {Protocol: "tcp", Port: 179},
		{Protocol: "tcp", Port: 2379}, {Protocol: "tcp", Port: 2380}, {Protocol: "tcp", Port: 5473},
		{Protocol: "tcp", Port: 6443}, {Protocol: "tcp", Port: 6666}, {Protocol: "tcp", Port: 6667},
	}
	defaultFailsafeOutbound = []ProtoPort{
		{Protocol: "udp", Port: 53}, {Protocol: "udp", Port: 67}, {Protocol: "tcp", Port: 179},
		{Protocol: "tcp", Port: 2379}, {Protocol: "tcp", Port: 2380}, {Protocol: "tcp", Port: 5473},
		{Protocol: "tcp", Port: 6443}, {Protocol: "tcp", Port: 6666}, {Protocol: "tcp", Port: 6667},
	}
)

// WithDefaults fills zero fields with Project Calico's defaults. New does this itself; callers
// that build the kernel pieces from the same Config (route ownership, refresh intervals) should
// too. A nil failsafe list gets the default ports; an empty non-nil list means none.
func (c Config) WithDefaults() Config {
	if len(c.InterfacePrefixes) == 0 {
		c.InterfacePrefixes = []string{"cali"}
	}
	c.DefaultEndpointToHostAction = cmpOr(c.DefaultEndpointToHostAction, "Drop")
	if c.FailsafeInbound == nil {
		c.FailsafeInbound = defaultFailsafeInbound
	}
	if c.FailsafeOutbound == nil {
		c.FailsafeOutbound = defaultFailsafeOutbound
	}
	c.FilterDenyAction = cmpOr(c.FilterDenyAction, "Drop")
	c.LogPrefix = cmpOr(c.LogPrefix, "calico-packet")
	c.MarkMask = cmpOr(c.MarkMask, 0xffff0000)
	if !c.MetadataAddr.IsValid() {
		c.MetadataAddr = netip.MustParseAddr("127.0.0.1")
	}
	c.MetadataPort = cmpOr(c.MetadataPort, 8775)
	c.NftablesRefreshInterval = cmpOr(c.NftablesRefreshInterval, 180*time.Second)
	c.RouteRefreshInterval = cmpOr(c.RouteRefreshInterval, 90*time.Second)
	c.InterfaceRefreshInterval = cmpOr(c.InterfaceRefreshInterval, 90*time.Second)
	c.Routes.DeviceProtocol = cmpOr(c.Routes.DeviceProtocol, routes.DefaultDeviceProtocol)
	c.Routes.NormalPriority = cmpOr(c.Routes.NormalPriority, 1024)
	c.Routes.NormalPriorityV6 = cmpOr(c.Routes.NormalPriorityV6, 1024)
	c.Routes.ElevatedPriority = cmpOr(c.Routes.ElevatedPriority, 512)
	c.Routes.ElevatedPriorityV6 = cmpOr(c.Routes.ElevatedPriorityV6, 512)
	c.LiveMigrationRouteConvergenceTime = cmpOr(c.LiveMigrationRouteConvergenceTime, 30*time.Second)
	c.VXLANVNI = cmpOr(c.VXLANVNI, 4096)
	c.VXLANPort = cmpOr(c.VXLANPort, 4789)
	c.MTUFile = cmpOr(c.MTUFile, "/var/lib/calico/mtu")
	c.TableName = cmpOr(c.TableName, DefaultTable)
	c.Wireguard = c.Wireguard.withDefaults()
	if slices.Contains(c.InterfacePrefixes, "tap") {
		c.OpenStack = true
	}
	return c
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// rulesConfig converts the (defaulted) configuration for the renderers.
func (c Config) rulesConfig() (*rules.Config, error) {
	marks, err := rules.MarksFromMask(c.MarkMask)
	if err != nil {
		return nil, err
	}
	toHost, err := parseAction(c.DefaultEndpointToHostAction)
	if err != nil {
		return nil, fmt.Errorf("DefaultEndpointToHostAction: %w", err)
	}
	in, err := failsafes(c.FailsafeInbound)
	if err != nil {
		return nil, fmt.Errorf("FailsafeInbound: %w", err)
	}
	out, err := failsafes(c.FailsafeOutbound)
	if err != nil {
		return nil, fmt.Errorf("FailsafeOutbound: %w", err)
	}
	loop, err := parseLoopAction(c.ServiceLoopPrevention)
	if err != nil {
		return nil, fmt.Errorf("ServiceLoopPrevention: %w", err)
	}
	return &rules.Config{
		IPv6: c.IPv6Support, WorkloadPrefixes: c.InterfacePrefixes, Marks: marks,
		EndpointToHost: toHost, FailsafeIn: in, FailsafeOut: out,
		DropInvalid:             !c.DisableConntrackInvalidCheck,
		AllowVXLANFromWorkloads: c.AllowVXLANPacketsFromWorkloads,
		AllowIPIPFromWorkloads:  c.AllowIPIPPacketsFromWorkloads,
		VXLANPort:               uint16(c.VXLANPort),
		WireguardPortV4:         c.wgPort(nft.IPv4),
		WireguardPortV6:         c.wgPort(nft.IPv6),
		WireguardHostMark:       c.wgHostMark(),
		WireguardIfaces:         []string{c.Wireguard.InterfaceName, c.Wireguard.InterfaceNameV6},
		Reject:                  strings.EqualFold(c.FilterDenyAction, "Reject"),
		LogPrefix:               c.LogPrefix,
		NATOutgoingAddress:      c.NATOutgoingAddress,
		NATPortRange:            natPortRange(c.NATPortRange),
		NATExcludeHosts:         c.NATOutgoingExcludeHosts,
		ServiceLoop:             loop,
		OpenStack:               c.OpenStack, MetadataAddr: c.MetadataAddr, MetadataPort: c.MetadataPort,
	}, nil
}

// natPortRange is NATPortRange as a range; zero (unset) when its maximum is 0, as in Calico.
func natPortRange(r [2]uint16) nft.PortRange {
	if r[1] == 0 {
		return nft.PortRange{}
	}
	return nft.Ports(max(r[0], 1), r[1])
}

func parseAction(s string) (rules.Action, error) {
	for _, a := range []rules.Action{rules.ActionDrop, rules.ActionReturn, rules.ActionAccept} {
		if strings.EqualFold(s, string(a)) {
			return a, nil
		}
	}
	return "", fmt.Errorf("unknown action %q (want Drop, Return or Accept)", s)
}

// parseLoopAction parses ServiceLoopPrevention ("": Drop, Project Calico's default).
func parseLoopAction(s string) (rules.LoopAction, error) {
	switch strings.ToLower(s) {
	case "", "drop":
		return rules.LoopDrop, nil
	case "reject":
		return rules.LoopReject, nil
	case "disabled":
		return rules.LoopDisabled, nil
	}
	return 0, fmt.Errorf("unknown value %q (want Drop, Reject or Disabled)", s)
}

var failsafeProtos = map[string]uint8{"tcp": nft.ProtoTCP, "udp": nft.ProtoUDP, "sctp": nft.ProtoSCTP}

func failsafes(pps []ProtoPort) ([]rules.ProtoPort, error) {
	out := make([]rules.ProtoPort, 0, len(pps))
	for _, pp := range pps {
		proto, ok := failsafeProtos[strings.ToLower(cmpOr(pp.Protocol, "tcp"))]
		if !ok {
			return nil, fmt.Errorf("port %d: unknown protocol %q", pp.Port, pp.Protocol)
		}
		out = append(out, rules.ProtoPort{Protocol: proto, Net: pp.Net.Masked(), Port: pp.Port})
	}
	return out, nil
}
