// Package nftrace reads the kernel's nf_tables trace events
// (NFT_MSG_TRACE on the NFNLGRP_NFTRACE multicast group) in a network
// namespace: what `nft monitor trace` prints, for packets a rule marked
// with `meta nftrace set 1`. Tests compare them with the simulator's path
// (package sim).
//
// One file, nftrace.go: Listen and Reader (the trace events, as Events). The rules an event
// names by handle are listed by kernel.Backend.RawRules.
package nftrace
