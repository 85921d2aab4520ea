// Package trace answers "what happens to this connection, and what would happen once the staged
// policies are enforced?" from a datastore snapshot, with felix's own code and no second
// evaluator: for each host on the way, calc computes the host's model (package felix/calc; with
// calc.StagedAsEnforced for the pending verdict), the dataplane's ruleset builder renders the
// nftables tables felix would program (dataplane.BuildOffline, each policy and profile verdict
// rule stamped with its rule identifier), and the packet simulator (package nft/sim, checked
// against the kernel instruction by instruction) runs the connection's first packet through
// them. The path is read back from the rules the packet met: tier -> policy -> rule -> action
// per policy direction, as package flowlog/ruleid identifies them for flow logs.
//
// The files:
//
//	trace.go    Request -> Run (or a Tracer, which keeps the hosts' models) -> Trace: the
//	            enforced and the pending Verdict, a Hop per host on the way
//	places.go   what the ends are: workload endpoints, host endpoints, nodes, addresses
//	host.go     one host: calc -> BuildOffline -> sim.Compile; its interfaces and routes
//	path.go     the simulator's steps -> the rule identifiers of each direction
//	pending.go  PendingEvaluator: the pending trace of one host for flow logs (collector.Pending);
//	            PendingSource: the syncer's messages -> a PendingEvaluator, rebuilt after changes
//	format.go   Print: the trace for people (calicoctl trace)
//
// The hosts are modelled from the datastore: each has an uplink (the interface its host
// endpoint names, else eth0) holding its Node's addresses and the default routes, and one
// interface per local workload endpoint with routes to its addresses; felix's configuration is
// its defaults with the datastore's FelixConfigurations (the host's own files are not known).
// The source's egress policy is evaluated on its host, the destination's ingress policy on
// its host; an address no endpoint of the datastore holds is the network beyond the hosts.
//
// Staged policies (Project Calico's facts: its app-policy checker and felix's collector):
// StagedGlobalNetworkPolicy and StagedNetworkPolicy sit among the enforced policies of their
// tier, by order; one with stagedAction Delete never reaches felix; a tier whose policies are
// all staged is skipped by the enforced verdict and applies its end of tier to the pending one;
// the end of tier names the last policy of the tier for the enforced trace (felix's
// TierDefaultActionRuleID) and the first for the pending one (the checker's). Staged
// Kubernetes network policies are not evaluated (calc does not convert Kubernetes policy).
package trace
