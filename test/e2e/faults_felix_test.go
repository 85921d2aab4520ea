package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

// TestFelixKill9: felix killed with SIGKILL on both hosts leaves the dataplane programmed (no
// established connection drops, denied traffic stays denied); restarted, it converges and
// applies new changes.
func TestFelixKill9(t *testing.T) {
	requireBinaries(t)
	s := newSystem(t, topo.Options{Hosts: 2, Mode: topo.ModeBGP}, topo.StartOptions{Felix: true})
	w := s.policyWorld()
	conns := []*topo.Conn{s.openConn(w.client, w.web, 80), s.openConn(w.client, w.web, 8080), s.openConn(w.web, w.other, 80)}
	for _, h := range s.Hosts {
		h.Felix.Kill()
	}
	s.keepChecking(6*time.Second, conns, nil, w.enforced()...)
	for _, h := range s.Hosts {
		start := time.Now()
		if err := h.StartFelix(s.ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: felix ready %s after restart", h.Name, time.Since(start).Round(time.Millisecond))
	}
	s.keepChecking(4*time.Second, conns, nil, w.enforced()...)
	if err := w.other.SetLabels(s.ctx, map[string]string{"role": "client"}); err != nil {
		t.Fatal(err)
	}
	s.expect(20*time.Second, tcp(w.other, w.web, 80, true))
	s.keepChecking(0, conns, nil)
}

// TestDataplaneRepair: felix puts back its nftables table and a workload route deleted by hand
// (at its refresh interval, shortened here to 5 s).
func TestDataplaneRepair(t *testing.T) {
	requireBinaries(t)
	s := newSystemWith(t, topo.Options{Hosts: 2, Mode: topo.ModeBGP}, topo.StartOptions{Felix: true}, func(f *topo.Fabric) error {
		for _, h := range f.Hosts {
			h.FelixEnv = append(h.FelixEnv, "FELIX_NFTABLESREFRESHINTERVAL=5", "FELIX_ROUTEREFRESHINTERVAL=5")
		}
		return nil
	})
	w := s.policyWorld()
	h1 := s.Host(1)
	table := s.nftTable(h1)
	if _, err := h1.Exec(s.ctx, "nft", "delete", "table", table); err != nil {
		t.Fatal(err)
	}
	s.expect(5*time.Second, tcp(w.other, w.web, 80, true)) // no table, no policy
	s.expect(30*time.Second, w.enforced()...)              // repaired
	t.Logf("nftables table %s restored", table)

	route := w.web.IP(4).String()
	if _, err := h1.Exec(s.ctx, "ip", "route", "del", route); err != nil {
		t.Fatal(err)
	}
	s.expect(5*time.Second, tcp(w.client, w.web, 80, false)) // no route on host 1
	s.expect(30*time.Second, tcp(w.client, w.web, 80, true))
	out, err := h1.Exec(s.ctx, "ip", "route", "show", route)
	if err != nil || !strings.Contains(out, w.web.HostIface) {
		t.Fatalf("route to %s after repair: %q %v", route, out, err)
	}
}

// nftTable finds felix's table ("<family> <name>") in a host's namespace.
func (s *system) nftTable(h *topo.Host) string {
	s.t.Helper()
	out, err := h.Exec(s.ctx, "nft", "list", "tables")
	if err != nil {
		s.t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "table" && strings.Contains(f[2], "calico") {
			return f[1] + " " + f[2]
		}
	}
	s.t.Fatalf("no calico nftables table on %s: %q", h.Name, out)
	return ""
}
