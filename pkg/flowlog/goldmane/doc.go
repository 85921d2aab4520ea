// Package goldmane streams flow records to a Goldmane server, Project
// Calico's flow aggregator (FlowLogsGoldmaneServer), over its gRPC API.
//
// The files:
//
//	client.go     Config, New (TLS), Push (non-blocking queue), Run (connect, replay, send, reconnect)
//	convert.go    flowlog.Flow -> goldmane.Flow
//	goldmanepb/   collector.proto (ours: FlowCollector and its messages) and its generated code
//
// # Facts from Project Calico this package relies on
//
// The API is goldmane/proto/api.proto: package goldmane, service
// FlowCollector, method Connect(stream FlowUpdate) returns (stream
// FlowReceipt); FlowUpdate{flow = 1}; Flow, FlowKey, PolicyTrace and
// PolicyHit with the field numbers collector.proto repeats (its own text:
// only the names and numbers are Goldmane's). The client
// (goldmane/pkg/client, used by felix/collector/goldmane) sends one
// FlowUpdate and waits for its FlowReceipt before the next; keeps the
// flows it sent for 5 minutes and sends them all again after every
// (re)connection, the server removing duplicates; queues up to 5000 flows
// and drops what does not fit; reconnects with backoff from 1 s to 10 s.
// Its TLS (goldmane/pkg/client/tls.go, crypto/pkg/tls): when any of
// certificate, key or CA is set, a client certificate and key and a CA
// pool, TLS 1.2 at least, the server's name checked against the host of
// the address (grpc's default); with none set, plaintext. felix passes
// TyphaCertFile, TyphaKeyFile and TyphaCAFile
// (felix/collector/dpstatshelper.go).
//
// Where we differ: a receipt that does not come within 30 s fails the
// stream (felix waits forever); ServerName may name the expected server
// when the address is an IP; the replay is capped at 100,000 flows; end_time
// is the end of the flush interval (felix's conversion,
// felix/collector/goldmane/client.go, sends the start time twice; Goldmane
// files flows by their start into its 15 s buckets either way).
//
// Checked by hand against Goldmane built from Project Calico's source
// (TestRealGoldmane): it accepted our stream over mutual TLS and its stream
// client read both flows back, policies and counters intact. The whole
// system against it: scripts/goldmane-pc.sh (test/e2e/goldmanerun), two
// hosts' felixes and real connections, every flow of their files read back.
package goldmane
