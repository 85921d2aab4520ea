package fleet

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

// Usage is what one phase cost the etcd members (summed) and the proxies.
type Usage struct {
	Phase      string
	Wall       time.Duration
	EtcdCPU    float64 // CPU seconds, all members
	EtcdSentMB float64 // gRPC bytes sent to clients (etcd_network_client_grpc_sent_bytes_total)
	Ranges     float64 // Range requests started at the members
	Watches    float64 // Watch streams started at the members
	Writes     float64 // Put and Txn requests
	EtcdRSSMB  float64 // the largest member's RSS at the end of the phase
	ProxyCPU   float64 // CPU seconds, all proxies
	Relists    int64   // snapshots the agents' syncers delivered (felix and confd)
	Recovery   time.Duration
}

// counters is one reading of a process's cumulative counters.
type counters struct {
	pid  int
	vals map[string]float64
}

// meter reads the counters of every member and proxy and returns their growth between laps. A
// process restarted since the last lap counts from zero (what its previous run did after the
// last lap is lost).
type meter struct {
	c      *Cluster
	agents func() []*Agent
	last   map[string]counters
	relist int64
	start  time.Time
}

func newMeter(ctx context.Context, c *Cluster, agents func() []*Agent) *meter {
	m := &meter{c: c, agents: agents, last: map[string]counters{}}
	m.lap(ctx, "")
	return m
}

var memberMetrics = map[string]string{
	"sent":    "etcd_network_client_grpc_sent_bytes_total",
	"ranges":  `grpc_server_started_total{grpc_method="Range"`,
	"watches": `grpc_server_started_total{grpc_method="Watch"`,
	"puts":    `grpc_server_started_total{grpc_method="Put"`,
	"txns":    `grpc_server_started_total{grpc_method="Txn"`,
}

func (m *meter) lap(ctx context.Context, phase string) Usage {
	u := Usage{Phase: phase, Wall: time.Since(m.start)}
	for i, p := range m.c.Members {
		d := m.delta(fmt.Sprintf("m%d", i), p, m.c.MemberMetrics(ctx, i), memberMetrics)
		u.EtcdCPU += d["cpu"]
		u.EtcdSentMB += d["sent"] / 1e6
		u.Ranges += d["ranges"]
		u.Watches += d["watches"]
		u.Writes += d["puts"] + d["txns"]
		u.EtcdRSSMB = max(u.EtcdRSSMB, float64(p.Rss())/(1<<20))
	}
	for k, p := range m.c.Proxies {
		// The proxy's own metrics (cache hits) stay at 0 in etcd 3.4: the members' Range
		// counts show what the proxies answered from their cache.
		u.ProxyCPU += m.delta(fmt.Sprintf("p%d", k), p, "", nil)["cpu"]
	}
	var snaps int64
	for _, a := range m.agents() {
		snaps += a.Snapshots()
	}
	u.Relists, m.relist = snaps-m.relist, snaps
	m.start = time.Now()
	return u
}

// delta reads a process's CPU time and metrics and returns their growth since the last reading.
func (m *meter) delta(name string, p *topo.Proc, metrics string, which map[string]string) map[string]float64 {
	cur := counters{pid: p.Pid(), vals: map[string]float64{"cpu": cpuSeconds(p.Pid())}}
	for k, prefix := range which {
		cur.vals[k] = sumMetric(metrics, prefix)
	}
	prev, ok := m.last[name]
	out := map[string]float64{}
	for k, v := range cur.vals {
		switch {
		case !ok || prev.pid != cur.pid:
			out[k] = v
		case v >= prev.vals[k]:
			out[k] = v - prev.vals[k]
		}
	}
	if metrics == "" && ok && prev.pid == cur.pid { // did not answer: keep the old reading
		for k := range which {
			cur.vals[k], out[k] = prev.vals[k], 0
		}
	}
	m.last[name] = cur
	return out
}

// sumMetric sums the samples of a Prometheus text exposition whose line starts with prefix
// (a metric name, optionally with the start of its labels).
func sumMetric(text, prefix string) float64 {
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		rest := line[len(prefix):]
		if !strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "{") && !strings.HasPrefix(rest, ",") {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// cpuSeconds is the user+system CPU time of a process (0 if it is gone).
func cpuSeconds(pid int) float64 {
	if pid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndex(s, ")")+2:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

// percentile returns the p-th percentile (nearest rank) of ds (0 when empty).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Dist is a distribution summary.
type Dist struct {
	N             int
	P50, P99, Max time.Duration
}

func dist(ds []time.Duration) Dist {
	return Dist{N: len(ds), P50: percentile(ds, 50), P99: percentile(ds, 99), Max: percentile(ds, 100)}
}

func (d Dist) String() string {
	r := func(x time.Duration) time.Duration { return x.Round(time.Millisecond) }
	return fmt.Sprintf("n=%d p50 %s p99 %s max %s", d.N, r(d.P50), r(d.P99), r(d.Max))
}
