// Package nlhandle is calico-host's one netlink helper: it opens netlink handles bound to a
// network namespace, with a socket timeout, and repeats netlink dumps the kernel interrupted.
// The dataplane's kernel pieces (routes, interfaces, VXLAN), calico-startup and the CNI plugin
// share it.
//
// The files:
//
//	nlhandle.go  Open, OpenNS, OpenAt (handles bound to a namespace, SocketTimeout), RetryDump
//	             (up to DumpAttempts when the kernel interrupts a dump), IsLinkNotFound
//	addr.go      conversions between net.IPNet / net.IP and netip.Prefix / netip.Addr
package nlhandle
