package e2e

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/netnstest"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

// requireBinaries skips unless the kit's slow privileged tests may run (netnstest.RequireLong:
// root, not -short) and TestMain built the binaries under test.
func requireBinaries(t *testing.T) {
	t.Helper()
	netnstest.RequireLong(t)
	if bins.Dir == "" {
		t.Skip("the binaries under test were not built")
	}
}

// system is one test's fabric, with helpers that fail the test.
type system struct {
	*topo.Fabric
	t   *testing.T
	ctx context.Context
}

// newSystem builds the fabric and starts the daemons; everything is removed when the test ends
// (the logs are printed first if it failed).
func newSystem(t *testing.T, o topo.Options, start topo.StartOptions) *system {
	t.Helper()
	return newSystemWith(t, o, start, nil)
}

// newSystemWith is newSystem with a hook that runs once etcd is up, before any daemon starts.
func newSystemWith(t *testing.T, o topo.Options, start topo.StartOptions, before func(*topo.Fabric) error) *system {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	o.Bin, o.Logf = bins.Dir, t.Logf
	if os.Getenv("E2E_KEEP") != "" {
		o.KeepDir = true
	}
	began := time.Now()
	f, err := topo.New(ctx, o)
	if err != nil {
		t.Fatalf("building the fabric: %v", err)
	}
	s := &system{Fabric: f, t: t, ctx: ctx}
	t.Cleanup(func() {
		if t.Failed() {
			s.dumpLogs()
		}
		if o.KeepDir {
			t.Logf("kept %s", f.Dir)
		}
		f.Close()
	})
	if before != nil {
		if err := before(f); err != nil {
			t.Fatalf("preparing the datastore: %v", err)
		}
	}
	if err := f.Start(ctx, start); err != nil {
		t.Fatalf("starting the hosts: %v", err)
	}
	t.Logf("%d hosts (%s) up in %s", len(f.Hosts), o.Mode, time.Since(began).Round(time.Millisecond))
	return s
}

// dumpLogs prints the end of every log file.
func (s *system) dumpLogs() {
	filepath.Walk(s.LogDir(), func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		data, _ := os.ReadFile(path)
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		s.t.Logf("---- %s (last 3000 bytes)\n%s", strings.TrimPrefix(path, s.LogDir()+"/"), data)
		return nil
	})
}

// workload adds a workload with labels and starts servers in it; both go away with the test.
func (s *system) workload(h *topo.Host, name string, labels map[string]string, ports ...int) *topo.Workload {
	s.t.Helper()
	w, err := h.AddWorkload(s.ctx, name, labels)
	if err != nil {
		s.t.Fatalf("adding workload %s: %v", name, err)
	}
	if len(ports) > 0 {
		srv, err := w.NS.Serve(name, ports...)
		if err != nil {
			s.t.Fatal(err)
		}
		s.t.Cleanup(srv.Close)
	}
	return w
}

// serve starts servers in any namespace for the rest of the test.
func (s *system) serve(ns *topo.Netns, name string, ports ...int) {
	s.t.Helper()
	srv, err := ns.Serve(name, ports...)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(srv.Close)
}

func (s *system) apply(yaml string) {
	s.t.Helper()
	if err := s.Apply(s.ctx, yaml); err != nil {
		s.t.Fatalf("calicoctl apply: %v", err)
	}
}

func (s *system) calicoctl(args ...string) string {
	s.t.Helper()
	out, err := s.Calicoctl(s.ctx, "", args...)
	if err != nil {
		s.t.Fatalf("calicoctl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// expect waits (up to deadline) until every probe has its expected outcome.
func (s *system) expect(deadline time.Duration, probes ...topo.Probe) {
	s.t.Helper()
	start := time.Now()
	if _, err := topo.WaitProbes(s.ctx, probes, deadline, 1500*time.Millisecond); err != nil {
		s.t.Fatal(err)
	}
	s.t.Logf("%d probes as expected after %s", len(probes), time.Since(start).Round(time.Millisecond))
}

// eventually polls check until it passes.
func (s *system) eventually(timeout time.Duration, what string, check func() error) {
	s.t.Helper()
	if err := topo.Eventually(s.ctx, timeout, 200*time.Millisecond, check); err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
}

// tcp, udp and icmp build probes from a workload (or any namespace) to a workload.
func tcp(from *topo.Workload, to *topo.Workload, port int, want bool) topo.Probe {
	return topo.Probe{From: from.NS, FromName: from.Name, To: to.IP(4), ToName: to.Name, Proto: "tcp", Port: port, Want: want}
}

func udp(from *topo.Workload, to *topo.Workload, port int, want bool) topo.Probe {
	p := tcp(from, to, port, want)
	p.Proto = "udp"
	return p
}

func icmp(from *topo.Workload, to *topo.Workload, want bool) topo.Probe {
	p := tcp(from, to, 0, want)
	p.Proto = "icmp"
	return p
}

// toAddr probes an address that is not a workload.
func toAddr(from *topo.Netns, fromName string, to netip.Addr, toName, proto string, port int, want bool) topo.Probe {
	return topo.Probe{From: from, FromName: fromName, To: to, ToName: toName, Proto: proto, Port: port, Want: want}
}

// allPairs returns TCP probes between every ordered pair of distinct workloads, all expected
// to succeed.
func allPairs(port int, ws ...*topo.Workload) []topo.Probe {
	var out []topo.Probe
	for _, a := range ws {
		for _, b := range ws {
			if a != b {
				out = append(out, tcp(a, b, port, true))
			}
		}
	}
	return out
}
