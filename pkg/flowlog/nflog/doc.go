// Package nflog reads the packets that nftables' `log group N` statements
// send to user space (NFLOG): for each one its prefix (the rule
// identifier, package ruleid), its layer-3 length and its 5-tuple.
//
// The files:
//
//	subscriber.go  Subscribe: bind a group (in a given network namespace), callback per packet, Stats
//	packet.go      ParseIP: IPv4/IPv6 header (extension headers, fragments) -> length, Tuple
//
// # Library
//
// github.com/florianl/go-nflog/v2 (v2.1.0, the version the module proxy
// serves; MIT): the NFLOG configuration messages (bind, copy mode and
// range, unbind on close) and attribute parsing over
// github.com/mdlayher/netlink, which the project already uses, with the
// network namespace as a socket option. The alternative served was
// github.com/ti-mo/netfilter, which has no NFLOG messages (we would have
// written them); Project Calico writes its own (felix/nfnetlink).
//
// # Behaviour, and where it differs from felix's reader
//
// Copy mode is "packet" with a copy range of DefaultCopyRange bytes (a
// rule's snaplen, 80 in felix's rules, applies within it). The length is
// the IP header's (total length; IPv6 payload length + 40), which is what
// conntrack's byte counters count; felix counts the copied bytes, which a
// snaplen cuts short. ICMPv6 echo identifiers and types are read as
// ICMP's are (felix reads ICMP only). A message without a prefix or an IP
// packet is counted (Stats.ParseErrors) and skipped; lost messages
// (ENOBUFS: the socket's buffer overran) are counted (Stats.Overruns),
// logged once, and reading goes on. The kernel batches messages and sends
// them after up to 1 s by default (measured here: 1.01 s for a lone
// packet); felix keeps that default for flow logs (it shortens it only for
// DNS logs) and aggregates in user space for 10 ms on top. FlushTimeout
// changes it.
//
// Only one socket can bind a group in a network namespace: felix's groups
// are 1 (ingress) and 2 (egress).
package nflog
