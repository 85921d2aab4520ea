// Package felix is the calico-felix daemon. It connects one pipeline, syncer -> calculation
// graph -> dataplane, with one channel between each pair and nothing in between: calc reads the
// syncer's messages and sends its update batches straight to the dataplane, and publishes the
// facts felix itself needs (the datastore's part of the configuration, whether the datastore is
// ready, whether pools use VXLAN, endpoint counts; calc.Facts) and the set of local endpoints (to
// the status reporters). Felix resolves its configuration, waits for the datastore to be ready,
// builds the dataplane, restarts on configuration changes that need it, reports agent and
// endpoint status to etcd, and talks to systemd (READY after the first full apply, STATUS lines,
// a watchdog that needs every loop to make progress) and to HTTP health and metrics clients.
//
// The files:
//
//	build.go          Build (local configuration, etcd client, logger) for cmd/calico-felix;
//	                  ExitStatus, Usage
//	felix.go          Options, Daemon (its state; the Run goroutine owns the configuration), New,
//	                  Run, restart
//	loops.go          the Syncer and Dataplane interfaces (fakes in tests), NewDataplane, loop names
//	startup.go        waiting for the datastore, resolving the configuration, starting the dataplane,
//	                  the status reporters and the health and metrics servers; liveness and readiness
//	config.go         calc's facts -> live changes applied, or ErrRestart (exit status ExitRestart)
//	status.go         endpoint statuses to the reporters, READY after the first apply, systemd's
//	                  STATUS
//	firstapply.go     one etcd request after the first apply, so that conntrack sees felix's own
//	                  connection in the right direction
//	wireguard.go      WireGuard private keys before the dataplane starts; public keys in the Node's
//	                  status
//	clusterroutes.go  warnings when ProgramClusterRoutes and BGPConfiguration's programClusterRoutes
//	                  disagree for the pools in use
//	metrics.go        the daemon's own Prometheus metrics and MetricCollectors
//	memory.go         the garbage collector target (GOGC 15 unless set); heap sampling off without profiles
//
// The syncer and the dataplane are used through the interfaces of loops.go, so that tests can run
// the daemon with fakes; by default felix builds pkg/syncer and pkg/felix/dataplane itself. While
// etcd is unreachable felix is not ready, but keeps enforcing the last state it applied.
package felix
