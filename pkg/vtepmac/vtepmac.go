package vtepmac

import (
	"crypto/sha1"
	"net"
)

// ForNode is the VTEP MAC Project Calico derives for a node without VXLANTunnelMACAddr: 0x66
// ('f') then the first 5 bytes of sha1(nodename) (sha1(nodename+"-v6") for IPv6).
func ForNode(node string, ipv6 bool) net.HardwareAddr {
	if ipv6 {
		node += "-v6"
	}
	sum := sha1.Sum([]byte(node))
	return append(net.HardwareAddr{'f'}, sum[:5]...)
}
