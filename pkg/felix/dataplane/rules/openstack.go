package rules

import (
	"net/netip"

	"github.com/calico-host/calico-host/pkg/nft"
)

// OpenStack special cases (Config.OpenStack): VMs may reach the metadata service, DHCP and DNS
// on the host whatever DefaultEndpointToHostAction says, may send DHCP requests from 0.0.0.0,
// and 169.254.169.254:80 is DNATed to the metadata service.

// metadataIP is the address VMs use for the metadata service.
var metadataIP = netip.MustParsePrefix("169.254.169.254/32")

// openStackToHost are the workload-to-host rules of the table of version v.
func openStackToHost(cfg *Config, v nft.IPVersion) []nft.Rule {
	if !cfg.OpenStack {
		return nil
	}
	var rs []nft.Rule
	if a := cfg.MetadataAddr; a.IsValid() && versionOf(a) == v {
		rs = append(rs, rule(nft.DAddr(host(a)), nft.DPort(nft.ProtoTCP, nft.Port(cfg.MetadataPort)), nft.Accept()).
			WithComment("Allow metadata requests"))
	}
	if v == nft.IPv4 {
		rs = append(rs, rule(nft.SPort(nft.ProtoUDP, nft.Port(68)), nft.DPort(nft.ProtoUDP, nft.Port(67)), nft.Accept()).
			WithComment("Allow DHCP"))
	} else {
		rs = append(rs, rule(nft.SPort(nft.ProtoUDP, nft.Port(546)), nft.DPort(nft.ProtoUDP, nft.Port(547)), nft.Accept()).
			WithComment("Allow DHCPv6"))
	}
	return append(rs, rule(nft.DPort(nft.ProtoUDP, nft.Port(53)), nft.Accept()).WithComment("Allow DNS"))
}

// openStackRPFSkip lets VMs send DHCP requests before they have an address.
func openStackRPFSkip(cfg *Config, v nft.IPVersion) []nft.Rule {
	if !cfg.OpenStack || v != nft.IPv4 {
		return nil
	}
	return []nft.Rule{rule(
		nft.SAddr(netip.MustParsePrefix("0.0.0.0/32")), nft.DAddr(netip.MustParsePrefix("255.255.255.255/32")),
		nft.SPort(nft.ProtoUDP, nft.Port(68)), nft.DPort(nft.ProtoUDP, nft.Port(67)), nft.Accept(),
	).WithComment("Allow DHCP requests before the VM has an address")}
}

// openStackMetadataDNAT sends 169.254.169.254:80 to the metadata service (IPv4 only).
func openStackMetadataDNAT(cfg *Config, v nft.IPVersion) []nft.Rule {
	if !cfg.OpenStack || !cfg.MetadataAddr.Is4() || v != nft.IPv4 {
		return nil
	}
	return []nft.Rule{rule(nft.DAddr(metadataIP), nft.DPort(nft.ProtoTCP, nft.Port(80)),
		nft.Counter(), nft.DNATToPort(cfg.MetadataAddr, cfg.MetadataPort))}
}

// host is the single-address prefix of a.
func host(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }
