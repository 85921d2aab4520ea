// Package datastore reads and writes calico-host's state in etcd, in the exact key layout and JSON
// of Project Calico's etcdv3 datastore: v3 resources, IPAM blocks, affinities and handles, and
// felix status keys. Every write is a compare-and-swap.
// Every daemon and tool reaches etcd through it: calicoctl and the CNI plugins read and write,
// pkg/syncer streams, calico-startup and felix write their keys.
//
// The files:
//
//	keys.go       the key layout: prefixes, ResourceKey, block, affinity, handle and status keys
//	ids.go        ID and its kinds (ResourceID, BlockID, AffinityID, HandleID, IPAMConfigID,
//	              UnknownKey): ParseKey is the one reader of the layout, Key its writer
//	codec.go      values <-> JSON: strict decoding by what a key names, encoding of resources
//	unknown.go    read-modify-write keeps the JSON fields of a stored value our types do not know
//	client.go     Client on clientv3: TLS, reconnect backoff, keepalive and retry settings, Ping
//	kv.go         raw keys: get, batch get, paginated list, create and compare-and-swap update
//	              and delete
//	resources.go  v3 resources: Get, List (undecodable keys reported as InvalidKV), Create,
//	              Update, Delete, resourceVersion checks
//	typed.go      GetAs and ListAs, by Go type
//	validate.go   Validator: v3 objects checked with the full selector language
//	errors.go     Error and its Reasons (NotFound, AlreadyExists, Conflict)
//
// datastore/etcdtest starts an embedded etcd for tests.
package datastore
