// Package hostfib answers the simulator's routing questions (sim.FIB)
// from a live network namespace, over netlink: routes as `ip route get`
// gives them (an input route for the routing decision of a received
// packet), address types as the kernel's fib expression computes them
// (IPv4: the local routing table, inet_dev_addr_type; IPv6: the
// interface's addresses and the route, __nft_fib6_eval_type). It looks
// routes up without their source address: policy routing by source is not
// followed.
//
// One file, hostfib.go: FIB (New, on a descriptor of the namespace), the sim.FIB implementation.
package hostfib
