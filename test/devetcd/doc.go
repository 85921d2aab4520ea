// Command devetcd is a small embedded etcd server for the demo and the end-to-end tests (dev
// only, never shipped). It runs one member of a cluster (a single-member cluster by default),
// prints "devetcd ready" on stdout once the member serves clients, and exits cleanly on SIGINT
// or SIGTERM.
//
//	devetcd -data-dir /tmp/etcd -listen-client http://198.18.0.254:2379
//	devetcd -name m1 -data-dir d1 -listen-client http://198.18.0.251:2379 \
//	  -listen-peer http://198.18.0.251:2380 \
//	  -initial-cluster m1=http://198.18.0.251:2380,m2=http://198.18.0.252:2380,m3=http://198.18.0.253:2380
//
// One file, main.go: the flags and the embedded server.
package main
