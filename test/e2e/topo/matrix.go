package topo

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Probe is one connection attempt and its expected outcome.
type Probe struct {
	From     *Netns
	FromName string
	To       netip.Addr
	ToName   string
	Proto    string // "tcp", "udp" or "icmp"
	Port     int    // tcp and udp
	Want     bool   // expected to succeed
	// WantClient, when valid, is the client address the server must see (NAT checks).
	WantClient netip.Addr
	// Src, when valid, is the local address a TCP probe binds (spoofing checks).
	Src netip.Addr
}

func (p Probe) String() string {
	dst := p.To.String()
	if p.Proto != "icmp" {
		dst = netip.AddrPortFrom(p.To, uint16(p.Port)).String()
	}
	if p.Src.IsValid() {
		dst = p.Src.String() + " -> " + dst
	}
	return fmt.Sprintf("%s -> %s (%s %s)", p.FromName, p.ToName, p.Proto, dst)
}

// Result is the outcome of one probe.
type Result struct {
	Probe
	OK       bool
	Greeting Greeting
	Err      error
	Took     time.Duration
}

// Matches says whether the outcome is the expected one.
func (r Result) Matches() bool {
	if r.OK != r.Want {
		return false
	}
	return !r.OK || !r.WantClient.IsValid() || r.Greeting.Client == r.WantClient
}

// allowedTimeout is the least time a probe expected to succeed gets, so that a loaded machine
// does not make a slow answer look like a denial.
const allowedTimeout = 3 * time.Second

// Run makes one attempt; a denied connection takes the whole timeout (at least allowedTimeout
// when the probe is expected to succeed).
func (p Probe) Run(ctx context.Context, timeout time.Duration) Result {
	if p.Want {
		timeout = max(timeout, allowedTimeout)
	}
	start := time.Now()
	r := Result{Probe: p}
	switch p.Proto {
	case "tcp":
		if p.Src.IsValid() {
			r.Greeting, r.Err = p.From.TCPFrom(ctx, p.Src, netip.AddrPortFrom(p.To, uint16(p.Port)), timeout)
			break
		}
		r.Greeting, r.Err = p.From.TCP(ctx, netip.AddrPortFrom(p.To, uint16(p.Port)), timeout)
	case "udp":
		r.Greeting, r.Err = p.From.UDP(ctx, netip.AddrPortFrom(p.To, uint16(p.Port)), timeout)
	case "icmp":
		r.Err = p.From.Ping(ctx, p.To, timeout)
	default:
		r.Err = fmt.Errorf("unknown protocol %q", p.Proto)
	}
	r.OK, r.Took = r.Err == nil, time.Since(start)
	return r
}

// RunProbes runs every probe once, in parallel (at most 16 at a time).
func RunProbes(ctx context.Context, probes []Probe, timeout time.Duration) []Result {
	out := make([]Result, len(probes))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, p := range probes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			out[i] = p.Run(ctx, timeout)
			<-sem
		}()
	}
	wg.Wait()
	return out
}

// WaitProbes re-runs the probes that do not yet match their expectation until all match or the
// deadline passes; it returns the last results and an error listing the mismatches.
// Each attempt uses attempt as the connection timeout (the time a denied probe takes).
func WaitProbes(ctx context.Context, probes []Probe, deadline, attempt time.Duration) ([]Result, error) {
	results := make([]Result, len(probes))
	pending := make([]int, len(probes))
	for i := range probes {
		pending[i] = i
	}
	end := time.Now().Add(deadline)
	for {
		batch := make([]Probe, len(pending))
		for j, i := range pending {
			batch[j] = probes[i]
		}
		var still []int
		for j, r := range RunProbes(ctx, batch, attempt) {
			results[pending[j]] = r
			if !r.Matches() {
				still = append(still, pending[j])
			}
		}
		if len(still) == 0 {
			return results, nil
		}
		if time.Now().After(end) || ctx.Err() != nil {
			return results, mismatchError(results, still)
		}
		pending = still
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func mismatchError(results []Result, idx []int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d probes not as expected:", len(idx), len(results))
	for _, i := range idx {
		r := results[i]
		switch {
		case r.Want && !r.OK:
			fmt.Fprintf(&b, "\n  %s: want allowed, got %v", r.Probe, r.Err)
		case !r.Want && r.OK:
			fmt.Fprintf(&b, "\n  %s: want denied, got an answer (%s)", r.Probe, r.Greeting.Server)
		default:
			fmt.Fprintf(&b, "\n  %s: server saw client %s, want %s", r.Probe, r.Greeting.Client, r.WantClient)
		}
	}
	return fmt.Errorf("%s", b.String())
}
