// Package topo builds a multi-host calico-host system out of network namespaces, for the
// end-to-end tests and the demo:
//
//	"fabric" netns: bridge br0 198.18.0.254/24 (fd5c:ff::fe/64), router to the outside, etcd
//	"host-N" netns: eth0 198.18.0.N/24 (fd5c:ff::N/64) on br0; calico-startup, calico-confd +
//	                BIRD, calico-felix; workloads plugged in by the calico CNI plugin
//	"outside" netns: 198.18.1.1/24 (fd5c:fe::1/64) behind the fabric router, with no route to the
//	                pools (only NAT outgoing lets workloads reach it)
//
// Options.IPv6 makes the hosts dual stack; Options.IPv6Only gives them IPv6 only (no IPv4 address,
// pool or BGP session; etcd is reached over IPv6). Options.ProjectCalico names hosts that stand
// for Project Calico's calico-node instead of running calico-host (see projectcalico.go).
//
// Nothing touches the machine's own interfaces: every address, route, rule and process lives in
// namespaces named "<tag><pid>-<role>", all removed by Close (also on SIGINT when
// HandleSignals was called; SweepLeftovers removes those of a killed run).
//
// The files:
//
//	fabric.go               Options, Fabric: New builds the namespaces, bridge, router and etcd
//	netns.go                Netns: a namespace created here, commands run inside it
//	cleanup.go              the cleanup stacks, signal handling, SweepLeftovers
//	build.go                Binaries: the programs under test, built once
//	etcd.go                 Etcd: devetcd members in the fabric namespace (stop, start, compact,
//	                        leader)
//	host.go                 Host: one simulated machine, its configuration files and state
//	daemons.go              Fabric.Start: calico-startup, calico-confd + BIRD and calico-felix per host
//	proc.go                 Proc: a daemon in a namespace, its log, stop, kill and restart
//	notify.go               Notify: a daemon's systemd notification socket (READY, STATUS)
//	workload.go             Workload: a container plumbed by the calico CNI plugin
//	probe.go                TCP and UDP servers that answer probes inside a namespace
//	matrix.go               Probe, Result: connection attempts and their expected outcomes
//	packets.go              packets the probes cannot send (chosen source, broadcast, ARP) and
//	                        servers that record what arrives
//	kernel.go               a host's routes, VXLAN device, neighbour and FDB entries, read back
//	nftmonitor.go           NftMonitor: `nft monitor` lines awaited by token
//	wait.go                 Eventually and Consistently
//	projectcalico.go        hosts that stand for Project Calico's calico-node: their Node,
//	                        tunnel addresses and sync loop
//	pcstate.go              what the simulated calico-node reads from the datastore on each sync
//	pcbird.go               BIRD 1.6 configuration as Project Calico's confd renders it
//	bird16.go               BIRD 1.6 from Debian's bird package, extracted on first use
//	pcvxlan.go              VXLAN as Project Calico's felix programs it (device, routes,
//	                        neighbours, FDB), comparable with a host's kernel state
//	openstack.go            VMs as networking-calico plugs them: tap devices, WorkloadEndpoints
//	openstack_etcd.go       networking-calico's etcd writes, built by hand (not with our code)
//	openstack_sg.go         Neutron security group rules -> "ossg." NetworkPolicies
//	openstack_migration.go  LiveMigration objects as networking-calico writes them
//	openstack_status.go     what networking-calico reads back from felix, and its own keys
package topo
