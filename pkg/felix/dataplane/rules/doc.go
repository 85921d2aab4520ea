// Package rules renders felix's desired dataplane state as nftables chains, sets and verdict
// maps (package nft): pure functions from calc's policies, profiles, endpoints and IP sets plus a
// Config. Nothing here does I/O or keeps state.
//
// The layout follows Project Calico's nftables mode: one table per IP version (`ip calico`,
// `ip6 calico`; every renderer takes the version, so an IPv4 packet never evaluates an IPv6
// rule), each iptables-style table is a "layer" whose name prefixes every chain and map
// (filter-, nat-, raw-, mangle-), workloads are dispatched by verdict maps and policy verdicts
// travel in mark bits. Consecutive policies of a tier with the same selector form a group, as in
// Calico, but a group chain holds its policies' rules inline (see GroupChains): a policy that does
// not match costs its own rules and nothing else. A group or profile chain exists only while an
// endpoint chain jumps to it.
//
// The files:
//
//	config.go         Config (what the renderers need of felix's configuration), actions, mark bits
//	names.go          Layer and the names of chains, sets and maps, within nftables' length limit
//	static.go         the base chains (a data table) and the static chains: filter, raw, mangle,
//	                  VXLAN, IPIP and WireGuard rules, workload-to-host
//	nat.go            NAT chains: natOutgoing, floating IPs, the service loop guard
//	openstack.go      OpenStack: metadata, DHCP and DNS to the host, metadata DNAT, DHCP RPF skip
//	endpoints.go      workload endpoint chains (their tiers and profiles) and the dispatch maps
//	hostendpoints.go  host endpoint chains and dispatch, failsafe chains
//	groups.go         Grouper and group chains: policies of a tier with one selector, inline or not
//	runs.go           address runs: long runs of single-address rules behind one lookup
//	policy.go         PolicyRules: calc rules -> nft rules for one IP version, with the sets they
//	                  use and the rules that cannot be enforced (Problem), which drop
//	match.go          matcher: one calc rule's matches (protocol, addresses, ports, ICMP, sets)
//	expand.go         short lists expanded into disjoint rules, long ones kept as anonymous sets
//	sets.go           calc IP sets as nft set types and elements
//
// Package ruleset decides which of these chains, sets and maps the tables hold.
package rules
