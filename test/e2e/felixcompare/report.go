package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

// change makes the data set's changes one after the other, each once the previous one showed
// in the kernel (waiting up to 10 s), o.gap apart, and records how many showed and their
// latencies.
func (s side) change(ctx context.Context, o options, ds *dataSet, ns *topo.Netns, res *result) error {
	if len(ds.changes) == 0 {
		return nil
	}
	m, err := topo.StartNftMonitor(ns)
	if err != nil {
		return err
	}
	defer m.Stop()
	if err := monitorReady(ctx, ns, m); err != nil {
		return err
	}
	cli, err := client(ns)
	if err != nil {
		return err
	}
	defer cli.Close()
	var lat []time.Duration
	for i, c := range ds.changes {
		if i > 0 {
			time.Sleep(o.gap)
		}
		seen := m.Expect(c.token)
		start := time.Now()
		if _, err := cli.Put(ctx, c.key, string(c.value)); err != nil {
			return err
		}
		select {
		case t := <-seen:
			lat = append(lat, t.Sub(start))
		case <-time.After(10 * time.Second):
			res.missed++
			fmt.Fprintf(os.Stderr, "felixcompare: %s: %s change of %s never showed %s in the kernel\n", s.name, c.kind, c.key, c.token)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	res.seen = len(lat)
	if len(lat) > 0 {
		slices.Sort(lat)
		res.p50, res.max = lat[(len(lat)-1)/2], lat[len(lat)-1]
	}
	return nil
}

// monitorReady waits until the monitor reports changes: it reads the whole ruleset first and
// misses what is committed meanwhile. It adds and deletes a table of its own in ns until the
// monitor shows it (within 2 minutes).
func monitorReady(ctx context.Context, ns *topo.Netns, m *topo.NftMonitor) error {
	for i := 0; ; i++ {
		table := fmt.Sprintf("fcprobe%d", i)
		seen := m.Expect(table)
		if _, err := ns.Exec(ctx, "nft", "add table ip "+table+"; delete table ip "+table); err != nil {
			return err
		}
		select {
		case <-seen:
			return nil
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
		if i == 60 {
			return errors.New("nft monitor reported nothing within 2 minutes")
		}
	}
}

// summarize prints the medians of each felix's runs and the ratios ours / Project Calico's.
func summarize(results map[string][]result) {
	metrics := []struct {
		name string
		get  func(result) float64
	}{
		{"start to ready (s)", func(r result) float64 { return r.ready.Seconds() }},
		{"peak RSS at ready (MiB)", func(r result) float64 { return mib(r.readyHWM) }},
		{"RSS at ready (MiB)", func(r result) float64 { return mib(r.readyRSS) }},
		{"ruleset lines", func(r result) float64 { return float64(r.lines) }},
		{"change p50 (ms)", func(r result) float64 { return ms(r.p50) }},
		{"peak RSS after the changes (MiB)", func(r result) float64 { return mib(r.afterHWM) }},
		{"RSS after the changes (MiB)", func(r result) float64 { return mib(r.afterRSS) }},
		{"load average", func(r result) float64 { return r.readyLoad }},
	}
	fmt.Printf("medians over %d runs:\n", len(results["ours"]))
	fmt.Printf("  %-34s %10s %10s %8s\n", "", "ours", "calico", "ratio")
	for _, m := range metrics {
		ours := median(results["ours"], m.get)
		line := fmt.Sprintf("  %-34s %10.2f", m.name, ours)
		if theirs, ok := results["calico"]; ok {
			t := median(theirs, m.get)
			line += fmt.Sprintf(" %10.2f %7.2fx", t, ours/t)
		}
		fmt.Println(line)
	}
}

func median(rs []result, get func(result) float64) float64 {
	var vs []float64
	for _, r := range rs {
		vs = append(vs, get(r))
	}
	slices.Sort(vs)
	if len(vs) == 0 {
		return 0
	}
	return vs[(len(vs)-1)/2]
}

// dialIn makes gRPC connections from inside ns.
func dialIn(ns *topo.Netns) []grpc.DialOption {
	return []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		return ns.DialContext(ctx, "tcp", addr)
	})}
}

// procMeminfo is a field of /proc/meminfo, in bytes.
func procMeminfo(field string) int64 {
	data, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// loadavgField is field i of /proc/loadavg (0: the 1-minute load average).
func loadavgField(i int) float64 {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	if i >= len(f) {
		return 0
	}
	v, _ := strconv.ParseFloat(f[i], 64)
	return v
}
