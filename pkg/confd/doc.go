// Package confd is calico-confd: it follows the BGP objects of the datastore (BGPConfiguration,
// BGPPeer, BGPFilter, Node, IPPool and this host's block affinities) and keeps BIRD 2's
// configuration in step with them.
//
// The pipeline, one concern per file:
//
//	store.go    syncer messages -> Inputs (the objects, by name)
//	build.go    Inputs -> Model (pure), Project Calico's semantics; by part: peers.go, filters.go,
//	            routes.go, workloadpeers.go (sessions with this node's workloads)
//	model.go    the Model: one node's BGP configuration, every value typed and checked
//	syntax.go   the typed values of the Model: BIRD symbols, strings, escaped comments, communities
//	render.go   Model -> files, through the Go text/template files in /etc/calico/confd/templates
//	stage.go    files -> staging directory -> check (bird -p) -> atomic rename of changed files
//	reload.go   changed files -> "configure" on BIRD's control socket (birdctl) or a command
//	engine.go   one Sync: all of the above, remembering whether BIRD still needs a reload
//	daemon.go   the loop: debounce, retry with backoff, periodic resync, READY/STATUS/WATCHDOG
//	config.go   /etc/calico/confd.toml, conf.d/*.toml and the environment
//	main.go     wiring for cmd/calico-confd
//	metrics.go  calico-confd's Prometheus metrics, BGP sessions by state asked of BIRD at scrape
//
// Every value a template prints is typed and checked against BIRD's grammar when the Model is
// built (syntax.go); a datastore value that does not fit is left out with a warning, and a
// BGPFilter that cannot be written exactly stops the sessions that use it rather than filtering
// less. Warnings reach the files only as escaped comments.
//
// A render that fails (template error, bird -p rejecting the result) changes no file: BIRD keeps
// running on the last good configuration, the error goes to the log and to systemd's STATUS,
// and the next change (or the retry) renders again.
package confd
