// Package nlhandle is calico-host's one netlink helper: it opens netlink handles bound to a
// network namespace, with a socket timeout, repeats netlink dumps the kernel interrupted, and
// holds the requests on links and addresses that the dataplane's kernel pieces share. The
// kernel pieces (routes, interfaces, VXLAN, IPIP: each package's Netlink adapter embeds Handle
// and keeps its own Handle interface and fake), calico-startup and the CNI plugin use it.
//
// The files:
//
//	nlhandle.go  Open, OpenNS, OpenAt (handles bound to a namespace, SocketTimeout), RetryDump
//	             (up to DumpAttempts when the kernel interrupts a dump), IsLinkNotFound
//	handle.go    Handle (OpenHandle, Wrap, NS, Close): a handle in one namespace with the shared
//	             requests by link index (FindLink, DeleteLink, SetMTU, SetMAC, SetUp, LinkAddrs,
//	             AddAddr, DelAddr)
//	addr.go      conversions between net.IPNet / net.IP and netip.Prefix / netip.Addr
package nlhandle
