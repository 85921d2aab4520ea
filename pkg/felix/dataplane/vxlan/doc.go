// Package vxlan keeps this host's VXLAN tunnel device (vxlan.calico or vxlan-v6.calico) and its
// layer-2 state as Project Calico's felix does: the device (VNI, port, no learning, MTU, MAC, up,
// the tunnel address), and for every remote VTEP a permanent ARP/NDP entry (tunnel address ->
// VTEP MAC) and a permanent FDB entry (VTEP MAC -> the host's underlay address). Routes to remote
// blocks through the device are written by package routes.
//
// The files:
//
//	config.go   Config (one device) and VTEP, the device MTU and MAC, the workload MTU file
//	devices.go  Devices, what the dataplane drives: the desired Device list, one Manager per
//	            device name, unlisted devices removed, periodic resyncs, the cached host MTU
//	manager.go  Manager: one device and a mirror of its permanent ARP/NDP and FDB entries,
//	            diffed against the desired ones; a resync re-reads them
//	device.go   creating, fixing or replacing the device and its address
//	handle.go   Link, Neigh, Handle and Netlink: the netlink operations the manager needs (Netlink
//	            embeds nlhandle.Handle, which does the link and address requests)
//	fake.go     Fake: an in-memory kernel for tests
package vxlan
