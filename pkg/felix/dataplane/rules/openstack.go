package rules

import (
	"net/netip"

	"github.com/calico-host/calico-host/pkg/felix/dataplane/nft"
)

// OpenStack special cases (Config.OpenStack): VMs may reach the metadata service, DHCP and DNS
// on the host whatever DefaultEndpointToHostAction says, may send DHCP requests from 0.0.0.0,
// and 169.254.169.254:80 is DNATed to the metadata service.

// metadataIP is the address VMs use for the metadata service.
var metadataIP = netip.MustParsePrefix("169.254.169.254/32")

// openStackToHost are the workload-to-host rules.
func openStackToHost(cfg *Config) []nft.Rule {
	if !cfg.OpenStack {
		return nil
	}
	udp := nft.L4Proto(nft.ProtoUDP)
	var rs []nft.Rule
	if a := cfg.MetadataAddr; a.IsValid() {
		rs = append(rs, rule(nft.L4Proto(nft.ProtoTCP), nft.DAddr(host(a)), nft.DPort(nft.ProtoTCP, nft.Port(cfg.MetadataPort)), nft.Accept()).
			WithComment("Allow metadata requests"))
	}
	rs = append(rs, rule(nft.NFProto(nft.IPv4), udp, nft.SPort(nft.ProtoUDP, nft.Port(68)), nft.DPort(nft.ProtoUDP, nft.Port(67)), nft.Accept()).
		WithComment("Allow DHCP"))
	if cfg.IPv6 {
		rs = append(rs, rule(nft.NFProto(nft.IPv6), udp, nft.SPort(nft.ProtoUDP, nft.Port(546)), nft.DPort(nft.ProtoUDP, nft.Port(547)), nft.Accept()).
			WithComment("Allow DHCPv6"))
	}
	return append(rs, rule(udp, nft.DPort(nft.ProtoUDP, nft.Port(53)), nft.Accept()).WithComment("Allow DNS"))
}

// openStackRPFSkip lets VMs send DHCP requests before they have an address.
func openStackRPFSkip(cfg *Config) []nft.Rule {
	if !cfg.OpenStack {
		return nil
	}
	return []nft.Rule{rule(
		nft.SAddr(netip.MustParsePrefix("0.0.0.0/32")), nft.DAddr(netip.MustParsePrefix("255.255.255.255/32")),
		nft.L4Proto(nft.ProtoUDP), nft.SPort(nft.ProtoUDP, nft.Port(68)), nft.DPort(nft.ProtoUDP, nft.Port(67)), nft.Accept(),
	).WithComment("Allow DHCP requests before the VM has an address")}
}

// openStackMetadataDNAT sends 169.254.169.254:80 to the metadata service.
func openStackMetadataDNAT(cfg *Config) []nft.Rule {
	if !cfg.OpenStack || !cfg.MetadataAddr.Is4() {
		return nil
	}
	return []nft.Rule{rule(nft.DAddr(metadataIP), nft.L4Proto(nft.ProtoTCP), nft.DPort(nft.ProtoTCP, nft.Port(80)),
		nft.Counter(), nft.DNAT(cfg.MetadataAddr, cfg.MetadataPort))}
}

// host is the single-address prefix of a.
func host(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }
