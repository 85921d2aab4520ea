// Package dataplane programs this host's kernel from the calculation graph's updates (etcd ->
// syncer -> calc -> dataplane -> nft): one nftables table per IP version (`ip calico` and, with
// IPv6, `ip6 calico`, through the nft Applier on netlink), routes, interface sysctls and host-side
// addresses, the interface monitor, and the VXLAN, IPIP and WireGuard devices. It never reads the
// datastore; everything comes from calc.Update batches.
//
// The files:
//
//	api.go            Config (what the dataplane needs of felix's configuration), EndpointStatus
//	config.go         NewConfig: felix's configuration -> Config; rules.Config from it
//	dataplane.go      Dataplane (its state) and its options, New, apply: build the tables, commit
//	                  them in one nftables transaction, then workload interfaces and routes
//	                  (skipped after changes of policies, profiles or IP sets only)
//	loop.go           Run: drain the batches, apply when calc and the interface monitor are in
//	                  sync, rate-limited, retried with backoff, periodic full resyncs
//	model.go          model: the latest value calc sent for every ID, plus the interfaces; values
//	                  are never changed in place, and the changes since the last ruleset build
//	                  and since routes and interfaces were last applied
//	kernel.go         the interfaces of the kernel pieces (routes, interfaces, VXLAN, IPIP,
//	                  WireGuard), so that tests can run on fakes
//	pieces.go         opening the netlink-backed pieces in Config.NetNS
//	gates.go          endpointGates: what a workload endpoint may ask for (spoofing, floating IPs)
//	hostendpoints.go  which interfaces are workloads, which host endpoint claims an interface
//	quarantine.go     quarantine: objects the kernel refused, replaced by drops and retried later
//	status.go         endpoint statuses (up, down, error) and workloadConfigurer: each workload
//	                  interface's settings, host-side addresses and (OpenStack) static neighbours
//	routes.go         the desired routes: workloads, VXLAN; their ownership and priority
//	clusterroutes.go  unencapsulated pools' routes when felix programs them; blackholes of this
//	                  host's blocks
//	vxlan.go          the desired VXLAN devices per IP version
//	ipip.go           the desired IPIP device and routes; Problems reports what cannot be programmed
//	wireguard.go      the desired WireGuard devices, peers, keys and routes
//	mtu.go            the workload MTU from the host MTU and the encapsulations, and its file
//	livemigration.go  a state machine per migrating workload endpoint, deciding its route priority
//	memory.go         returning memory after big transactions, a tighter GC during full syncs
//	metrics.go        the dataplane's Prometheus metrics
//	addrs.go          small address helpers
//	offline.go        BuildOffline: the tables a running dataplane would program, without a
//	                  kernel (for package trace)
//
// The packages below it, one job each:
//
//	dataplane/ruleset    the model -> the desired nftables tables, updated in place
//	dataplane/rules      each chain's rules
//	dataplane/routes     route reconciliation over netlink
//	dataplane/ifaces     the interface monitor and interface settings
//	dataplane/vxlan      VXLAN devices, neighbours and FDB entries
//	dataplane/wireguard  WireGuard devices and peers
//	dataplane/announce   watching an interface for a migrated VM's announcement
//
// Fail closed: an object the kernel refuses is quarantined: a chain becomes one that drops, a
// set becomes empty and every chain looking it up drops, so that one bad object never stops
// other changes. Any other failure makes the next apply a full resync of nftables and routes;
// returning from Run leaves the kernel state in place.
package dataplane
