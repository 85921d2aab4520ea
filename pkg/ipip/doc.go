// Package ipip keeps this host's IP-in-IP tunnel device, tunl0, as Project Calico's felix does:
// the device exists (created as a link of kind ipip; Project Calico gets it by loading the ipip
// module), has the configured MTU (IpInIpMtu, or the host MTU less the 20 bytes of the outer
// header), holds exactly this host's tunnel address (/32) among its IPv4 addresses, and is up.
// When IPIP is off, the device is left in place but its addresses are removed (Project Calico's
// cleanUpIPIPAddrs). Routes through tunl0 are written by package routes.
//
// A kernel without the ipip driver refuses the device (EOPNOTSUPP: unknown link kind). The
// Tunnel then reports StateNoDriver, logs it once per change of state, and tries again only at a
// resync; the dataplane programs no IPIP route without a ready device.
//
// felix's dataplane drives a Tunnel; calico-startup uses EnsureLink to check whether tunl0 can
// exist.
//
// The files:
//
//	tunnel.go   Device (the desired state), State, Handle, Tunnel (Apply, resyncs), EnsureLink
//	netlink.go  Netlink: the Handle on nlhandle.Handle (which does the link and address requests)
//	fake.go     Fake: an in-memory Handle for tests, which records the requests
package ipip
