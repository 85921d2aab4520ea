// Command scale measures calico-felix at scale (run it through scripts/scale.sh):
//
//  1. calcbench's data set (default 1,000 local and 10,000 remote workload endpoints, 1,000
//     policies) loaded into an etcd; felix started on the local host of a one-host fabric, with a
//     veth per local workload: time to a programmed dataplane (ready), RSS;
//  2. 200 changes (alternately a new port in an active policy and a new address for a remote
//     workload) written to etcd, each timed until the kernel reports it ("nft monitor");
//  3. 50 felix syncers on the same etcd, directly and through "etcd grpc-proxy": time to sync,
//     watchers and watch streams on the server, server CPU and bytes sent for the initial sync
//     and a burst of changes.
//
// Everything runs in network namespaces named ccscale<pid>-*, removed at the end.
//
// The files:
//
//	main.go     the flags, the fabric and the three measurements
//	load.go     calcbench's data into etcd, a veth per local workload, readiness
//	latency.go  the changes, each timed until the kernel shows it; percentiles
//	syncers.go  n felix syncers on one etcd, directly and through grpc-proxy, and what they cost
package main
