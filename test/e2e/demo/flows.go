package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

// flowFlush is the demo's FlowLogsFlushInterval (felix.toml), short so that the flows of its
// last connections are written before it ends.
const flowFlush = 2 * time.Second

// explained is a connection the demo traces and then finds in the flow logs.
type explained struct {
	title    string
	src, dst *topo.Workload
	port     int
	allowed  bool
}

// explainConnections makes one allowed and one denied connection, prints calicoctl trace's
// answer for each and then the flow log lines both hosts wrote for them.
func (d *demo) explainConnections(ctx context.Context) error {
	conns := []explained{
		{title: "allowed", src: d.workload("web-1"), dst: d.workload("db-2"), port: 5432, allowed: true},
		{title: "denied", src: d.workload("db-1"), dst: d.workload("db-2"), port: 5432},
	}
	for _, c := range conns {
		if c.src == nil || c.dst == nil {
			return errors.New("the demo needs at least 2 hosts to explain connections")
		}
	}
	fmt.Fprintf(d.out, "\nWhere did my packet go? (flow logs on: felix.toml FlowLogsFileEnabled, FlowLogsFlushInterval = %s)\n", flowFlush)
	since := time.Now()
	for _, c := range conns {
		if err := d.traceConnection(ctx, c); err != nil {
			return err
		}
	}
	for _, c := range conns {
		if err := d.printFlows(ctx, c, since); err != nil {
			return err
		}
	}
	return nil
}

func (d *demo) workload(name string) *topo.Workload {
	for _, w := range d.wls {
		if w.Name == name {
			return w
		}
	}
	return nil
}

// traceConnection makes the connection (for the flow logs) and prints the trace of it.
func (d *demo) traceConnection(ctx context.Context, c explained) error {
	p := topo.Probe{From: c.src.NS, FromName: c.src.Name, To: c.dst.IP(4), ToName: c.dst.Name, Proto: "tcp", Port: c.port, Want: c.allowed}
	if r := p.Run(ctx, 2*time.Second); !r.Matches() {
		return fmt.Errorf("%s: %v", p, r.Err)
	}
	args := []string{"trace", c.src.WEPName, c.dst.WEPName, fmt.Sprintf("--port=%d", c.port)}
	out, err := d.f.Calicoctl(ctx, "", args...)
	status := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		status, err = exit.ExitCode(), nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\nThe %s connection %s -> %s (TCP %d), as calicoctl traces it:\n", c.title, c.src.Name, c.dst.Name, c.port)
	fmt.Fprintf(d.out, "$ calicoctl %s\n%s$ echo $?\n%d\n", strings.Join(args, " "), out, status)
	return nil
}

// printFlows waits for the flow log lines of the connection that end after since, from the
// source's host (reporter src) and the destination's (reporter dst), and prints them.
func (d *demo) printFlows(ctx context.Context, c explained, since time.Time) error {
	deadline := time.Now().Add(10*flowFlush + 10*time.Second)
	var lines []string
	for {
		lines = nil
		for _, h := range []*topo.Host{c.src.Host, c.dst.Host} {
			lines = append(lines, flowLines(h.FlowLogFile(), c, since)...)
		}
		if len(lines) >= 2 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	if len(lines) < 2 {
		return fmt.Errorf("the flow logs of %s and %s lack the %s connection %s -> %s after %s", c.src.Host.Name, c.dst.Host.Name,
			c.title, c.src.Name, c.dst.Name, 10*flowFlush+10*time.Second)
	}
	fmt.Fprintf(d.out, "\nThe %s connection in the flow logs (%s, then %s):\n", c.title, c.src.Host.FlowLogFile(), c.dst.Host.FlowLogFile())
	for _, l := range lines {
		fmt.Fprintln(d.out, l)
	}
	return nil
}

// flowLines returns the last line of a flow log file for the connection that ends after since.
func flowLines(path string, c explained, since time.Time) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	last := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var fl flowlog.Flow
		if json.Unmarshal(sc.Bytes(), &fl) != nil {
			continue
		}
		if fl.SourceName == c.src.ContainerID && fl.DestName == c.dst.ContainerID && fl.Proto == "tcp" &&
			int(fl.DestPort) == c.port && fl.EndTime.After(since) {
			last = sc.Text()
		}
	}
	if last == "" {
		return nil
	}
	return []string{last}
}
