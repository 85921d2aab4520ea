package fleet

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Report is the result of Run.
type Report struct {
	Phases             []Usage
	FelixSync, Confd   Dist
	Fanout             Fanout
	Diffs              []string
	Verified           bool
	Agents, FullAgents int
	Opts               Options // as run (defaults filled in)
}

// Run runs every phase (cold start, churn, and with Disruptions leader loss, compaction and proxy
// restart), then Verify, and returns the measurements.
func Run(ctx context.Context, o Options) (*Report, error) {
	f, err := Start(ctx, o)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &Report{Agents: f.o.Hosts, FullAgents: f.o.FullAgents, Opts: f.o}
	u, fs, cs, err := f.ColdStart(ctx, 15*time.Minute)
	if err != nil {
		return r, fmt.Errorf("cold start: %w", err)
	}
	r.Phases, r.FelixSync, r.Confd = append(r.Phases, u), fs, cs
	f.o.Logf("cold start: %.1fs", u.Wall.Seconds())
	r.Phases = append(r.Phases, f.Idle(ctx, 10*time.Second))
	u, r.Fanout, err = f.Churn(ctx, f.o.ChurnFor)
	r.Phases = append(r.Phases, u)
	if err != nil {
		return r, fmt.Errorf("churn: %w", err)
	}
	if f.o.Disruptions {
		steps := []func(context.Context) (Usage, error){f.LeaderLoss, f.Compaction}
		if f.o.Proxies > 0 {
			steps = append(steps, f.ProxyRestart)
		}
		for _, step := range steps {
			u, err := step(ctx)
			r.Phases = append(r.Phases, u)
			if err != nil {
				return r, err
			}
			f.o.Logf("%s: recovered in %.1fs", u.Phase, u.Recovery.Seconds())
		}
	}
	r.Diffs, err = f.Verify(ctx)
	r.Verified = err == nil
	return r, err
}

// Print writes the report's tables.
func (r *Report) Print(w io.Writer) {
	o := r.Opts
	via := "directly on the 3 members"
	if o.Proxies > 0 {
		via = fmt.Sprintf("through %d grpc-proxies (%d hosts each)", o.Proxies, (o.Hosts+o.Proxies-1)/o.Proxies)
	}
	fmt.Fprintf(w, "\n%d agents (%d with calc), %s; %d policies; churn %.0f changes/s, liveness timeout %s, etcd progress interval %s\n", r.Agents, r.FullAgents, via,
		o.Policies, o.ChurnRate, livenessString(o.LivenessTimeout), livenessString(o.ProgressInterval))
	fmt.Fprintf(w, "%-16s %8s %9s %7s %9s %8s %8s %7s %8s %9s %8s %9s\n", "phase", "wall", "etcd CPU", "%core",
		"sent MB", "ranges", "watches", "writes", "RSS MB", "proxy CPU", "relists", "recovery")
	for _, u := range r.Phases {
		rec := "-"
		if u.Recovery > 0 {
			rec = fmt.Sprintf("%.1fs", u.Recovery.Seconds())
		}
		pct := 0.0
		if u.Wall > 0 {
			pct = 100 * u.EtcdCPU / u.Wall.Seconds()
		}
		fmt.Fprintf(w, "%-16s %7.1fs %8.2fs %6.1f%% %9.1f %8.0f %8.0f %7.0f %8.0f %8.2fs %8d %9s\n", u.Phase,
			u.Wall.Seconds(), u.EtcdCPU, pct, u.EtcdSentMB, u.Ranges, u.Watches, u.Writes, u.EtcdRSSMB, u.ProxyCPU,
			u.Relists, rec)
	}
	fmt.Fprintf(w, "time to in-sync after start: felix %s; confd %s\n", r.FelixSync, r.Confd)
	fo := r.Fanout
	fmt.Fprintf(w, "fan-out latency of %d changes (%d writes failed, %d deliveries missing):\n  to each agent: %s\n  to all agents: %s\n",
		fo.Changes, fo.Failed, fo.Missed, fo.Each, fo.All)
	if r.Verified && len(r.Diffs) == 0 {
		fmt.Fprintf(w, "correctness: every agent with calc equals a fresh agent\n")
	}
	for _, d := range r.Diffs {
		fmt.Fprintf(w, "DIFFERS: %s\n", d)
	}
}

func livenessString(d time.Duration) string {
	if d == 0 {
		return "default"
	}
	return d.String()
}
