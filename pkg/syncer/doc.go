// Package syncer streams a consistent view of etcd key prefixes: a paginated list pinned to one
// revision, then a watch from revision+1. Each key is parsed once, here, into what it names (a
// datastore.ID): consumers never read the key layout. It sits between etcd and the daemons (etcd ->
// syncer -> calc or confd's store). Consumers receive one stream of Messages: a snapshot (the
// complete state, replacing whatever they had) or a batch of incremental updates, plus the syncer's
// status. InSync always means the consumer holds a state at least as new as etcd's revision when
// the (re-)list started: a snapshot listed at an older, rounded revision (see Config.ListQuantum)
// comes with ResyncInProgress, followed by the changes since, and InSync only once those are
// delivered. Consumers act on their model (render, program, READY) only while InSync. When etcd is
// lost (no sign of life within Config.LivenessTimeout) it reports WaitingForDatastore, retries with
// capped backoff and, once etcd answers, resumes the watch from the revision the consumer has
// (InSync again, no snapshot; the consumer keeps its model throughout). Only when that history is
// gone (compaction) does it re-list and send a new snapshot. It never exits on its own.
//
// The files:
//
//	types.go      Status, Update (a datastore.ID and its decoded value), Message: what consumers see
//	config.go     Config and its defaults; the decoders: DefaultDecoder, and FailClosedDecoder with
//	              Invalid for objects whose absence could widen what is allowed
//	undecoded.go  a value that does not decode as its kind, read leniently: what does not
//	              decode is left out and named
//	syncer.go     Syncer: Run's cycle (list, watch, resume or re-list), status, backoff, delivery
//	list.go       the paginated list at one revision, pages decoded while the next are fetched
//	catchup.go    catchUp: when a snapshot listed at an older revision has caught up (InSync)
//	watch.go      watchLoop: the watch on every prefix, batching while the consumer is busy,
//	              progress requests, stuck watches restarted
//	liveness.go   liveness: signs of life during a watch, probes, when etcd is lost
package syncer
