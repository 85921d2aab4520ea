// Package ifaces watches a network namespace's interfaces (netlink link and address events plus a
// periodic full listing) and configures the host side of workload interfaces: sysctls, written in
// the right namespace, host-side addresses and permanent neighbour entries. It also finds the
// host MTU. The dataplane's loop consumes its Updates and calls its configuration methods.
//
// The files:
//
//	state.go       State (one interface: name, index, up, MTU, addresses), Update, Event
//	netlink.go     Handle (what the monitor needs of netlink) and Netlink (on nlhandle.Handle):
//	               listing, subscriptions to link and address events, neighbour entries
//	monitor.go     Monitor: a full listing, InSync, then events; a new listing every refresh
//	               interval (jittered) or when the subscription breaks, reporting only what changed
//	interfaces.go  Interfaces: the monitor plus the workload configuration, as the dataplane uses it
//	sysctl.go      SysctlWriter and ProcSys (/proc/sys written from a thread in the namespace);
//	               the workload interface sysctls; IP forwarding; permanent neighbours
//	hostaddrs.go   the host-side addresses of workload interfaces (added and removed to match)
//	mtu.go         HostMTU: the smallest MTU of the up interfaces matching a pattern
//	fake.go        Fake and FakeSysctl, in-memory stand-ins for tests
package ifaces
