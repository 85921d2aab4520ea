// Package startup is calico-startup: it prepares the datastore and this host for calico-host,
// then keeps the host's Node up to date. It registers the Node (name, addresses, AS number),
// creates the default IP pools and cluster-wide defaults exactly as Project Calico's calico-node
// startup does in etcd mode, writes /var/lib/calico/nodename, and then, as a daemon, follows host
// address changes (netlink) and keeps the tunnel addresses (IPIP, VXLAN, WireGuard) allocated in
// IPAM and written on the Node while the pools (and, for WireGuard, felix's public key) call for
// them.
//
// The files:
//
//	config.go         Config, LoadConfig: /etc/calico/node.toml and the environment, validated
//	settings.go       the table of settings: TOML key, environment variable, default, parser
//	family.go         Family (V4, V6)
//	startup.go        Startup and its Deps: Register (the one-shot sequence), RunOnce, Run
//	open.go           Open: the production dependencies (etcd, netlink, IPAM, systemd)
//	nodename.go       the node name (NODENAME, the nodename file, the hostname), validated
//	node.go           this host's Node: addresses, interfaces, AS number, conflicts, written
//	                  with compare-and-swap retries
//	autodetect.go     IP autodetection (first-found, can-reach, interface, skip-interface, cidr)
//	kernel.go         Kernel: what calico-startup reads from the kernel, over netlink
//	kernel_fake.go    FakeKernel for unit tests
//	pools.go          the default IP pools: created only when a family has none
//	defaults.go       ClusterInformation, tiers, FelixConfiguration, BGPConfiguration and
//	                  IPAMConfiguration defaults: missing objects created, missing fields filled
//	tunnel.go         tunnel addresses per kind: which pools give them, IPAM handles, the Node's
//	                  fields, VTEP MACs
//	monitor.go        the daemon's loops: address monitor and tunnel loop under a watchdog
//	ipipdevice.go     whether tunl0 can exist when an IPv4 pool uses IPIP (gauge, STATUS warning)
//	unimplemented.go  pool and Node settings calico-host does not implement, reported once each
//	metrics.go        calico-startup's Prometheus metrics and their server
//
// Existing objects keep every value a user set: only missing objects and fields are written, and
// no default pool is created beside a stored pool that cannot be read.
package startup
