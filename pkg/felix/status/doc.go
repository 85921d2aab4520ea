// Package status writes felix's reports into etcd, in Project Calico's layout (the keys of
// datastore.AgentStatusKey, LastReportedStatusKey and the endpoint status keys): the agent's
// liveness key on a lease kept alive, its lease-less copy, and per-endpoint status keys for
// networking-calico and calicoctl. It also writes the endpoint status files the CNI plugin waits
// for, and publishes this host's WireGuard public keys on its Node.
//
// The files:
//
//	agent.go      Agent: the status key on a lease and last_reported_status, every interval
//	endpoints.go  Endpoints: one status key per local workload and host endpoint, written on
//	              change, deleted when the endpoint goes, repaired by periodic resyncs
//	files.go      Files: one file per local workload endpoint whose policy is programmed
//	              (EndpointStatusPathPrefix/endpoint-status), as Project Calico's felix writes them
//	files_fs.go   the files' atomic writes, removals and reads
//	cas.go        writer: compare-and-swap writes at the remembered revision, one round trip
//	              normally, a read and one retry when the belief was wrong
//	wgkey.go      PublishWireguardKeys: the Node's status.wireguardPublicKey(V6)
//	metrics.go    Metrics: status writes and failures
package status
