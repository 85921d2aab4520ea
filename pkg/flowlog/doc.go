// Package flowlog is the flow record of calico-felix's flow logs and its
// aggregation, in Project Calico's shape, so that the same flows can be
// written to a file and streamed to a Goldmane server.
//
// The files:
//
//	enums.go      Action, Reporter, EndpointType, PolicyKind: Goldmane's numbers, whisker's names
//	record.go     Flow, Key, Trace, PolicyHit: one flow record and its JSON line
//	tuple.go      Tuple: one connection (what NFLOG and conntrack report)
//	aggregate.go  Update -> Aggregator -> []Flow every flush interval
//
// The packages below it, one job each:
//
//	flowlog/ruleid     the rule identifier carried in NFLOG prefixes, and its lookup table
//	flowlog/nflog      NFLOG group subscriber: prefix, packet length, 5-tuple
//	flowlog/conntrack  conntrack dump and events with accounting counters
//	flowlog/filesink   JSON lines file with size-based rotation
//	flowlog/goldmane   FlowCollector gRPC client (and goldmanepb, its generated code)
//	flowlog/collector  NFLOG paths + conntrack counters + endpoints -> Updates -> flows; its loop
//
// docs/flowlogs.md is the plan for wiring them into calico-felix.
//
// # Facts from Project Calico this package relies on
//
// The record is goldmane.Flow (goldmane/proto/api.proto): FlowKey's
// source/dest name, namespace and type, dest_port, proto, reporter, action
// and policies (PolicyTrace: enforced_policies, pending_policies of
// PolicyHit{kind, namespace, name, tier, action, policy_index, rule_index,
// trigger}); Flow's start/end time, labels, packets/bytes in/out and
// num_connections_started/completed/live. Its JSON follows whisker-backend's
// FlowResponse (snake_case, enums by name, "policies":{"enforced":[...],
// "pending":[...]}, times in RFC 3339), keeping Goldmane's field names
// where whisker renames them (proto, not protocol) and its labels as a
// sorted "key=value" list. The Kubernetes service fields are left out.
//
// Aggregation is felix's for Goldmane (felix/collector/flowlog,
// aggregator.go at FlowPrefixName level): the key drops addresses and the
// source port and keeps both ends' aggregated name, namespace and type, the
// protocol, the destination port, the reporter and the action. Felix keeps
// one entry per such key and splits it per distinct enforced trace at flush
// time, each copy carrying the same counters; Goldmane's FlowKey holds the
// trace, so we key by it too and never double counters. Labels are the
// intersection over the interval's updates; the pending trace is the
// latest. A flow with open connections is reported every interval; one
// with none is forgotten after it was reported. num_connections_live is
// felix's NumFlows: the connections open at the start of the interval plus
// those seen during it. Network ends are "pvt" (RFC 1918 IPv4) or "pub",
// with namespace "-" like host endpoints. For ICMP the destination port is
// type<<8|code (felix's tuple), so an echo request has dest_port 2048.
//
// Reporter: ingress policy (NFLOG group 1) reports Dst, egress (group 2)
// Src. For Dst, "in" counts the original direction of the connection; for
// Src, the reply (felix/collector/stats.go).
package flowlog
