// Package fleet is a load harness for calico-host's use of etcd at fleet scale: N agents in one
// process, each the real syncers of one host (felix's, into felix's calc graph, and confd's),
// against a real 3-member etcd cluster (the Debian etcd binary), directly or through
// `etcd grpc-proxy` instances, with data of a fleet's shape (N hosts x 20 workload endpoints
// with their IPAM blocks, 2,000 policies). It measures etcd's CPU, memory, bytes sent and
// requests during a cold start, steady churn, a leader loss, a compaction and a proxy restart,
// each agent's time to in-sync and the fan-out latency of a change; and it checks that every
// agent ends with the state a freshly started agent computes (see Run).
//
// The files:
//
//	fleet.go    Options, Fleet: Start, Close, ColdStart
//	cluster.go  Cluster: the etcd members and grpc-proxies in a network namespace of their own
//	agent.go    Agent: one host's felix syncer and calc graph and its confd syncer
//	model.go    Model: what the dataplane would program from calc's batches, to compare agents
//	data.go     Shape: the fleet's datastore, Load, and the churn's changes
//	phases.go   churn, fan-out latency, the disruptions and Verify
//	measure.go  Usage, Dist: etcd's and the proxies' CPU, memory, bytes and requests
//	report.go   Report, Run (every phase, then Verify), Print
//
// fleet/cmd/fleet runs it from the command line.
package fleet
