// Package calc is felix's calculation graph: it turns the syncer's stream of datastore changes into
// the exact desired dataplane state for one host, incrementally (etcd -> syncer -> calc ->
// dataplane -> nft). It is pure: no etcd, no kernel and no clock that its caller does not give it.
//
// Its output is a sequence of batches of Updates (types.go). The dataplane keeps the latest value
// for every ID and programs the kernel from that model; an Update with a nil pointer payload never
// occurs (removals have their own types). Within a batch, updates come in dependency order (see
// Graph.Flush): IP sets before the policies that use them, policies and profiles before the
// endpoints that reference them, removals of endpoints before removals of what they referenced.
//
// The files (each calculator, with its state, in its own):
//
//	types.go          the Update types: the graph's whole output vocabulary
//	graph.go          Graph: the calculators, the revision of every key held, snapshots, Flush
//	dispatch.go       each datastore.ResourceID to the calculators that use it; invalid objects
//	items.go          itemRegistry: every labelled object (all hosts' endpoints, network sets) with
//	                  its labels flattened over what it inherits: profiles' labelsToApply, its
//	                  namespace's (pcns.) and service account's (pcsa.), from kns.<ns>, ksa.<ns>.<sa>
//	labelindex.go     labelIndex: selectors against labelled items, each selector filed under one
//	                  anchor, so that a change costs what it affects; two of them: every item (for
//	                  IP sets) and this host's endpoints (for policy selectors)
//	selectors.go      the selectors of policies and rules, built the way libcalico builds them
//	policies.go       policyCalc: a policy is active while it matches a local endpoint; staged
//	                  policies count only in a graph made with StagedAsEnforced (the pending model)
//	tiers.go          tiers, policy order, each local endpoint's sorted tiers
//	rules.go          ruleRenderer: api.Rule -> Rule (families, nets, ports, named ports, sets)
//	profiles.go       profileCalc: profiles named by local endpoints are active and rendered
//	ipsets.go         ipSetCalc: the selector and named-port sets that active rules use,
//	                  reference-counted, members from the index's matches, sent as deltas
//	endpoints.go      endpointCalc: local workload and host endpoints with their resolved policy;
//	                  EndpointObserver (the status reporters)
//	livemigration.go  migrationCalc: which local workload endpoints are a LiveMigration's
//	                  source or target
//	bgppeers.go       bgpPeerCalc: the local workload endpoints that BGPPeers select as local peers
//	nodes.go          nodeCalc: hosts and VTEPs
//	routes.go         routeCalc: routes from IPAM blocks (or workload addresses, routesource.go)
//	pools.go          poolCalc: IP pools
//	clusterroutes.go  PoolType and ClusterRoutes: which pool types' cluster routes a component
//	                  programs (programClusterRoutes)
//	config.go         configCalc: this host's facts and the datastore's part of felix's configuration
//	scopedconfig.go   the selector-scoped FelixConfiguration that applies to this host
//	facts.go          Facts: what felix itself needs (configuration, sync state, VXLAN pools, counts)
//	run.go            Loop: the graph between the syncer and the dataplane, rate-limited flushes,
//	                  never blocking on the dataplane; publishes Facts
//	routesource.go    RouteSource, resolved by felix's configuration (SetRouteSource)
//	metrics.go        the datastore, calculation graph and felix_cluster_num_* metrics
//
// Calculators mark what changed as dirty; Flush computes only the dirty outputs, compares each
// with what it last sent and emits the differences.
//
// Fail closed: a policy that fails validation becomes a rule dropping everything that reaches it
// in both directions; a rule that cannot be interpreted drops what reaches it; a profile that is
// missing or invalid drops all traffic; a host endpoint that fails validation keeps what can be
// checked and loses its profiles. Each is logged with the object's name.
package calc
