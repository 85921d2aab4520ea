// Package vtepmac derives a node's VXLAN tunnel endpoint (VTEP) MAC as Project Calico does when
// the Node has no vxlanTunnelMACAddr (vxlanTunnelMACAddrV6): calico-startup stores it, felix's
// configuration, calculation graph and dataplane use it for their own and other hosts' VTEPs.
// It has no dependencies beyond the standard library, so that calc and calicoctl do not pull in
// netlink for it.
//
// Files: vtepmac.go (ForNode).
package vtepmac
