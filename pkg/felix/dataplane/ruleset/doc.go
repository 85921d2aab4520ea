// Package ruleset builds felix's desired nftables tables from the dataplane's model: `ip
// <name>` and, with IPv6 on, `ip6 <name>`, which the dataplane's nft Applier writes in one
// transaction. Package rules renders each chain; this package decides which chains, sets and
// map elements the tables hold and keeps them up to date in place, so that a build costs what
// changed: Build(Input) -> tables, where Input is the model's values (calc's, by pointer, never
// copied) and what changed since the last build.
//
// Each part of the tables has one owner, one file:
//
//	builder.go     Builder, Input, Changes: the order of a build; the tables (every part writes
//	               the objects it owns into them)
//	workloads.go   local workload endpoints: their chains (shared by content, counted), the
//	               dispatch map elements, which endpoint owns an interface
//	groups.go      policy group and profile chains (counted references from endpoint chains),
//	               the policies as members of groups, inline or out of line
//	sets.go        calc's IP sets in the tables, deltas applied in place; empty stand-ins for
//	               sets calc did not send, which chain looks up which set, and which sets have
//	               members (a rule that needs a member of an empty set is left out of its chain)
//	ipset.go       IPSet: a calc IP set as the model holds it, per-version elements and deltas
//	static.go      the static chains, host endpoint chains and maps, internal sets: rebuilt
//	               when what they depend on changes, leftovers removed
//	values.go      the user values the static chains hold (spoofing prefixes, failsafe
//	               entries), which the quarantine may withhold
//	quarantine.go  what the dataplane's quarantine asks of the builder: names, values, and
//	               invalidation
//	attribution.go the NFLOG prefixes of the verdict rules with flow logs on, claimed by
//	               their owners, and the prefix table published with each build
//	ruleids.go     for a trace (package trace), off in felix: each policy and profile verdict
//	               rule stamped with its rule identifier (package flowlog/ruleid) as comment
//
// The builder does no I/O: it only fills nft.Tables (which record what changed, for the
// Applier's partial syncs). Rendering that cannot be enforced becomes a drop where it is, with
// a log line naming the policy or profile (fail closed).
package ruleset
