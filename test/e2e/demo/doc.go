// Command demo shows calico-host working as one system: three simulated hosts in network
// namespaces on one bridge, an etcd, calico-startup, calico-confd + BIRD and calico-felix on
// every host, two workloads per host plugged in by the CNI plugin, and a policy applied with
// calicoctl. It prints which connections succeed before and after the policy, calicoctl trace's
// answer and the flow log lines (felix's flow logs are on) for one allowed and one denied
// connection, the BGP sessions and where the logs are, then removes everything it created (also on Ctrl-C).
//
// Run it through scripts/demo.sh (make demo), which builds the binaries first.
//
// The files:
//
//	main.go    the fabric, the daemons, the workloads and the policy; cleanup on exit or Ctrl-C
//	report.go  the policy, the connection matrix before and after it, the daemons' status
//	flows.go   one allowed and one denied connection: their traces and flow log lines
package main
