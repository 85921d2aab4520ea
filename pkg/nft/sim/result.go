package sim

import (
	"fmt"
	"strings"

	"github.com/calico-host/calico-host/pkg/nft"
)

// StepKind is what a Step records, as the kernel's trace types do.
type StepKind uint8

// Step kinds.
const (
	// StepRule: every match of a rule held (NFT_TRACETYPE_RULE). Its
	// Verdict is Continue when the rule gave none, or the rule's verdict
	// (an explicit return is a StepReturn with a Rule).
	StepRule StepKind = iota + 1
	// StepReturn: the chain returned, by a return verdict (Rule is the
	// rule) or by reaching its end (Rule -1, Verdict Continue).
	StepReturn
	// StepPolicy: the base chain ended without a verdict; Verdict is its
	// policy.
	StepPolicy
)

func (k StepKind) String() string {
	return [...]string{"", "rule", "return", "policy"}[k]
}

// Step is one event of a packet's path through a base chain: what the
// kernel's nftrace reports.
type Step struct {
	Kind    StepKind
	Table   nft.TableID
	Chain   string
	Rule    int    // index of the rule in its chain; -1 for an implicit return or a policy
	Comment string // the rule's comment
	Text    string // the rule as nft lists it
	Verdict nft.Verdict
	Mark    uint32 // the packet's mark after the step
	// What the rule's statements did before its verdict: counters bumped,
	// log statements (prefix, NFLOG group), other effects in words (a mark
	// set, a NAT, notrack, reject).
	Counters int
	Logs     []Log
	Effects  []string
}

// Log is a log statement a rule ran.
type Log struct {
	Prefix   string
	Group    uint16 // NFLOG group, when HasGroup
	HasGroup bool
	Level    uint32
}

func (s Step) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", s.Kind, s.Table, s.Chain)
	if s.Rule >= 0 {
		fmt.Fprintf(&b, " #%d", s.Rule)
	}
	fmt.Fprintf(&b, " -> %s", s.Verdict)
	if s.Text != "" {
		fmt.Fprintf(&b, " [%s]", s.Text)
	}
	for _, e := range s.Effects {
		fmt.Fprintf(&b, " (%s)", e)
	}
	return b.String()
}

// HookRun is the packet's way through the base chains of one hook.
type HookRun struct {
	Hook     nft.Hook
	IIF, OIF string
	Steps    []Step
	// Dropped is true when a chain dropped the packet (or rejected it);
	// otherwise every base chain accepted it.
	Dropped bool
}

// Fate is what became of the packet.
type Fate uint8

// Fates.
const (
	FateDropped     Fate = iota + 1 // dropped by a rule or a base chain's policy
	FateDelivered                   // accepted by the input hook: delivered to the host
	FateSent                        // accepted by postrouting: sent out of OIF
	FateNoRoute                     // the host has no route for it (dropped by routing, not by a rule)
	FateTTLExceeded                 // not forwarded: its TTL or hop limit ran out
)

func (f Fate) String() string {
	return [...]string{"", "dropped", "delivered", "sent", "no route", "TTL exceeded"}[f]
}

// Count is a rule whose counter statements ran: N of them. A counter
// before a match counts even when the match then fails (the rule then has
// no Step).
type Count struct {
	Table nft.TableID
	Chain string
	Rule  int
	N     int
}

// Result is a packet's path through the hooks, and its fate.
type Result struct {
	Hooks []HookRun
	// Counters are the counters the packet bumped, in order.
	Counters []Count
	Fate     Fate
	OIF      string // the interface it leaves by (FateSent)
	// Packet is the packet as it was last seen (after any NAT).
	Packet Packet
	Mark   uint32
}

// Steps returns every step of every hook, in order.
func (r *Result) Steps() []Step {
	var out []Step
	for _, h := range r.Hooks {
		out = append(out, h.Steps...)
	}
	return out
}

func (r *Result) String() string {
	var b strings.Builder
	for _, h := range r.Hooks {
		fmt.Fprintf(&b, "%s (in %q, out %q):\n", h.Hook, h.IIF, h.OIF)
		for _, s := range h.Steps {
			fmt.Fprintf(&b, "  %s\n", s)
		}
	}
	fmt.Fprintf(&b, "fate: %s", r.Fate)
	if r.OIF != "" {
		fmt.Fprintf(&b, " via %s", r.OIF)
	}
	return b.String()
}
