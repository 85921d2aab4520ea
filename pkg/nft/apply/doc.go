// Package apply keeps a backend's tables (package kernel, or package fake
// in tests) equal to desired nft.Tables, one batch per Apply.
//
// The files:
//
//	applier.go    Options, Applier, Stats: Apply decides between a partial and a full sync,
//	              commits, and keeps the mirror exact (or marks it unknown after a failure it
//	              cannot account for)
//	mirror.go     mirror: what the Applier knows a backend's table holds (pointers to the
//	              objects it wrote, or what it read), and which big sets it trusts
//	plan.go       plan: the operations of one sync across all tables, in phases, so that
//	              objects exist before anything refers to them and go after their users
//	plan_sets.go  planning sets and verdict maps: element changes, or a set written whole
//	fullsync.go   what a full sync reads: nothing when the ruleset generation has not moved,
//	              never a big set's elements
package apply
