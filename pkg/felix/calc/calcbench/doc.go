// Package calcbench generates a datastore of a chosen size for benchmarks and scale tests of
// the calculation graph and the dataplane: workload endpoints spread over hosts and namespaces
// with realistic labels, a mix of namespaced, tiered, global and OpenStack-style policies,
// network sets, profiles, nodes with host endpoints, IPAM blocks and configuration, as the
// decoded syncer updates the graph consumes.
//
// The shape is scale-invariant: the number of apps and security groups grows with the number of
// endpoints, so each endpoint matches about the same number of policies and sets at any size
// (about 100 endpoints per app, 10 policies per app at 1 policy per 10 endpoints). That makes
// the cost of one change comparable across sizes.
//
// The files:
//
//	benchdata.go  Shape, BenchData (the decoded updates, as one host sees them), RemoteHost, Encode
//	policies.go   the policy mix: namespaced app policies, security tier, OpenStack groups, global
package calcbench
