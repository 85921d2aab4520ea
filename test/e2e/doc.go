// Package e2e runs calico-host as a whole: several simulated hosts in network namespaces on one
// bridge, each running calico-startup, calico-confd with BIRD and calico-felix against one etcd,
// with workloads plugged in by the CNI plugin. The tests need root and are skipped with -short.
//
// Environment: E2E_BIN=<dir> uses prebuilt binaries (calico, calico-ipam, calico-startup,
// calico-confd, calico-felix, calicoctl, devetcd) instead of
// building them; E2E_KEEP=1 keeps each test's directory (configs and logs).
//
// It has no Go code besides the tests; test/e2e/topo is the harness, README.md says how to run
// them. The files:
//
//	main_test.go               TestMain: the binaries built once (or E2E_BIN), the WireGuard child
//	helpers_test.go            requireBinaries and the steps the tests share
//	crosshost_test.go          workloads on different hosts reach each other
//	policy_test.go             policy across hosts
//	routing_test.go            BGP routing with confd and BIRD, without felix
//	nat_test.go                NAT outgoing
//	ipv6_test.go               dual stack and IPv6 only
//	hostendpoint_test.go       host endpoints
//	openstack_test.go          OpenStack VMs; openstack_sg_test.go: security groups
//	wireguard_test.go          WireGuard between hosts
//	mixed_test.go              a cluster mixing calico-host with Project Calico's nodes
//	migration_test.go          a host moved from calico-node to calico-host, and back
//	churn_test.go              500 containers added and deleted with etcd restarts; nothing left
//	faults_etcd_test.go        etcd outage, compaction, leader loss
//	faults_felix_test.go       felix killed (-9); its table and routes put back after changes by hand
//	faults_data_test.go        invalid objects in the datastore
package e2e
