// Package backoff provides the retry delays of every calico-host loop: a capped exponential
// delay (Min, 2*Min, 4*Min, ... up to Max) with optional jitter, and a wait that ends early when
// its context does.
//
// One file, backoff.go: Backoff (Delay, Next, Reset, Wait) and Sleep.
package backoff
