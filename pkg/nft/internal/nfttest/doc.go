// Package nfttest builds the rulesets pkg/nft's tests share: a golden
// ruleset using every expression in every family, and felix-shaped
// rulesets of a chosen size for benchmarks.
//
// The files:
//
//	golden.go  Golden: every expression in every family
//	felix.go   Felix and Scale: felix-shaped rulesets (chains, rules, sets, maps) of a chosen size
package nfttest
