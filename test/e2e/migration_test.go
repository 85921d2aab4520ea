package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

// dbPolicy: db accepts TCP 80 from web only; once host 2 runs calico-felix it is enforced there.
const dbPolicy = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: db-ingress}
spec:
  selector: role == 'db'
  types: [Ingress]
  ingress:
  - {action: Allow, protocol: TCP, source: {selector: role == 'web'}, destination: {ports: [80]}}
`

// TestMigrateFromCalicoNode follows docs/migration.md on host 2, which starts as a Project Calico
// host (calico-node: its Node, IPAM blocks, tunnel addresses and a workload in etcd, BIRD 1.6 or
// its VXLAN device in the kernel): calico-node stops, calico-startup (node name from the
// nodename file calico-node wrote), calico-confd + BIRD 2 and calico-felix start. The Node (same
// uid), its IPAM blocks, affinities and handles, its tunnel addresses and the workload's endpoint
// are unchanged; a TCP connection opened before the switch still works after it; the host's BGP
// sessions or VTEP are calico-host's and as Project Calico's; policy is now enforced on host 2.
// Then the rollback: calico-node again on host 2, the same Node and IPAM state, and a container
// started afterwards is reachable.
func TestMigrateFromCalicoNode(t *testing.T) {
	forModes(t, func(t *testing.T, mode topo.Mode) {
		requireBinaries(t)
		s := newSystem(t, topo.Options{Hosts: 3, Mode: mode, IPv6: true, ProjectCalico: []int{2}}, topo.StartOptions{Felix: true})
		h2 := s.Host(2)
		web := s.workload(s.Host(1), "web", map[string]string{"role": "web"}, 80)
		db := s.workload(h2, "db", map[string]string{"role": "db"}, 80)
		client := s.workload(s.Host(3), "client", map[string]string{"role": "client"}, 80)
		both := func(from, to *topo.Workload, want bool) []topo.Probe {
			return []topo.Probe{tcp(from, to, 80, want), v6(tcp(from, to, 80, want), to)}
		}
		s.expect(30*time.Second, slices(both(web, db, true), both(client, db, true), both(db, web, true))...)
		conn, err := web.NS.OpenConn(s.ctx, topo.AddrPort(db.IP(4), 80), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		before := s.hostState(h2.Name, db)

		s.migrate(h2)

		after := s.hostState(h2.Name, db)
		s.compareHostStates(h2.Name, before, after)
		if err := conn.Echo("still here", 10*time.Second); err != nil {
			t.Errorf("connection opened before the migration: %v", err)
		}
		s.expect(30*time.Second, slices(both(web, db, true), both(client, db, true), both(db, web, true))...)
		if mode == topo.ModeBGP {
			s.checkMeshNeighbours(h2)
			s.checkNoDuplicateBIRDRoutes(h2)
		} else {
			for _, fam := range s.Families() {
				s.checkVXLANLikeCalico(h2, fam)
			}
		}
		s.apply(dbPolicy)
		s.expect(20*time.Second, slices(both(web, db, true), both(client, db, false))...)

		s.rollback(h2)
		s.compareHostStates(h2.Name, before, s.hostState(h2.Name, db))
		if mode == topo.ModeBGP {
			s.checkNoDuplicateBIRDRoutes(h2)
		}
		// A container started after the rollback is reached: no rule of calico-host's felix is
		// left to drop traffic from an interface it never knew.
		db2 := s.workload(h2, "db2", map[string]string{"role": "db2"}, 80)
		s.expect(30*time.Second, slices(both(web, db, true), both(web, db2, true), both(db2, client, true))...)
	})
}

func slices(ps ...[]topo.Probe) []topo.Probe {
	var out []topo.Probe
	for _, p := range ps {
		out = append(out, p...)
	}
	return out
}

// migrate runs the steps of docs/migration.md on h: stop calico-node; flush BIRD 1.6's routes
// (BGP mode); calico-startup with no nodename in node.toml (it reads the nodename file
// calico-node wrote); calico-confd and BIRD 2 (BGP mode); calico-felix.
func (s *system) migrate(h *topo.Host) {
	s.t.Helper()
	began := time.Now()
	h.StopProjectCalico()
	if s.Opts.Mode == topo.ModeBGP {
		// BIRD 1.6 leaves its routes ("persist"); a stale one (a block that moved) would keep
		// attracting its traffic (docs/migration.md, step 2).
		for _, fam := range []string{"-4", "-6"} {
			if _, err := h.Exec(s.ctx, "ip", fam, "route", "flush", "proto", "bird"); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	path := h.ConfigPath("node.toml")
	data, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatal(err)
	}
	text := strings.Replace(string(data), fmt.Sprintf("nodename = %q\n", h.Name), "", 1)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if err := h.StartStartup(s.ctx); err != nil {
		s.t.Fatal(err)
	}
	if s.Opts.Mode == topo.ModeBGP {
		if err := h.StartBGP(s.ctx); err != nil {
			s.t.Fatal(err)
		}
	}
	if err := h.StartFelix(s.ctx); err != nil {
		s.t.Fatal(err)
	}
	if s.Opts.Mode == topo.ModeBGP {
		if err := h.WaitBGPEstablished(s.ctx, (len(s.Hosts)-1)*len(s.Families())); err != nil {
			s.t.Fatal(err)
		}
	}
	s.t.Logf("%s: calico-node replaced by calico-host in %s", h.Name, time.Since(began).Round(time.Millisecond))
}

// rollback runs the rollback of docs/migration.md on h: stop calico-host, flush BIRD 2's routes
// (BGP mode), start calico-node, then delete calico-host felix's nftables tables (they stay in
// force after felix stops, by design).
func (s *system) rollback(h *topo.Host) {
	s.t.Helper()
	began := time.Now()
	h.StopCalicoHost()
	if s.Opts.Mode == topo.ModeBGP {
		for _, fam := range []string{"-4", "-6"} {
			if _, err := h.Exec(s.ctx, "ip", fam, "route", "flush", "proto", "bird"); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	if err := h.StartProjectCalico(s.ctx); err != nil {
		s.t.Fatal(err)
	}
	for _, fam := range []string{"ip", "ip6"} { // calico-felix's tables (the test's calico-node runs no felix)
		if out, err := h.Exec(s.ctx, "nft", "list", "tables", fam); err != nil {
			s.t.Fatal(err)
		} else if strings.Contains(out, "table "+fam+" calico\n") {
			if _, err := h.Exec(s.ctx, "nft", "delete", "table", fam, "calico"); err != nil {
				s.t.Fatal(err)
			}
		}
	}
	s.t.Logf("%s: back to calico-node in %s", h.Name, time.Since(began).Round(time.Millisecond))
}

// hostState is what must survive the migration: the Node, every IPAM key of the host (blocks
// affine to it, affinities, the handles of its allocations) and its workload's endpoint.
type hostState struct {
	node *api.Node
	ipam map[string]string
	wep  string
}

func (s *system) hostState(name string, w *topo.Workload) hostState {
	s.t.Helper()
	ds, err := s.Datastore()
	if err != nil {
		s.t.Fatal(err)
	}
	st := hostState{ipam: map[string]string{}}
	if st.node, err = datastore.GetAs[*api.Node](s.ctx, ds, "", name); err != nil {
		s.t.Fatal(err)
	}
	kvs, _, err := ds.ListKV(s.ctx, datastore.IPAMPrefix, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, kv := range kvs {
		v := string(kv.Value)
		if strings.Contains(kv.Key, "/host/"+name+"/") || strings.Contains(v, `"host:`+name+`"`) ||
			strings.Contains(kv.Key, "tunnel-addr-"+name) || strings.Contains(kv.Key, w.ContainerID) {
			st.ipam[kv.Key] = v
		}
	}
	wep, err := datastore.GetAs[*api.WorkloadEndpoint](s.ctx, ds, topo.WEPNamespace, w.WEPName)
	if err != nil {
		s.t.Fatal(err)
	}
	b, _ := json.Marshal(wep.Spec)
	st.wep = string(b)
	return st
}

// compareHostStates: same Node object (uid, creation time, addresses, AS, tunnel addresses; a
// VTEP MAC may be added, equal to the one Project Calico derives), same IPAM keys and values,
// same endpoint.
func (s *system) compareHostStates(name string, before, after hostState) {
	s.t.Helper()
	b, a := before.node, after.node
	if b.UID != a.UID || b.CreationTimestamp != a.CreationTimestamp {
		s.t.Errorf("%s: Node recreated: uid %s -> %s", name, b.UID, a.UID)
	}
	for fam, mac := range map[int]*string{4: &a.Spec.VXLANTunnelMACAddr, 6: &a.Spec.VXLANTunnelMACAddrV6} {
		if *mac != "" && *mac != topo.CalicoVTEPMAC(name, fam) {
			s.t.Errorf("%s: Node IPv%d VTEP MAC %s, Project Calico derives %s", name, fam, *mac, topo.CalicoVTEPMAC(name, fam))
		}
	}
	a.Spec.VXLANTunnelMACAddr, a.Spec.VXLANTunnelMACAddrV6 = b.Spec.VXLANTunnelMACAddr, b.Spec.VXLANTunnelMACAddrV6
	bs, _ := json.Marshal(b.Spec)
	as, _ := json.Marshal(a.Spec)
	if string(bs) != string(as) {
		s.t.Errorf("%s: Node spec changed:\nbefore %s\nafter  %s", name, bs, as)
	}
	if before.wep != after.wep {
		s.t.Errorf("%s: endpoint changed:\nbefore %s\nafter  %s", name, before.wep, after.wep)
	}
	var keys []string
	for k := range before.ipam {
		keys = append(keys, k)
	}
	for k := range after.ipam {
		if _, ok := before.ipam[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if before.ipam[k] != after.ipam[k] {
			s.t.Errorf("%s: IPAM key %s changed:\nbefore %q\nafter  %q", name, k, before.ipam[k], after.ipam[k])
		}
	}
	s.t.Logf("%s: Node, %d IPAM keys and the endpoint unchanged", name, len(before.ipam))
}

// checkNoDuplicateBIRDRoutes: BIRD 1.6's routes, kept in the kernel when it stopped ("persist"),
// do not linger beside BIRD 2's: one BIRD route per destination.
func (s *system) checkNoDuplicateBIRDRoutes(h *topo.Host) {
	s.t.Helper()
	s.eventually(20*time.Second, h.Name+": one BIRD route per destination", func() error {
		for _, fam := range s.Families() {
			routes, err := h.Routes(s.ctx, fam, "proto", "bird")
			if err != nil {
				return err
			}
			seen := map[string][]int{}
			for _, r := range routes {
				seen[r.Dst] = append(seen[r.Dst], r.Metric)
			}
			for dst, metrics := range seen {
				if len(metrics) > 1 {
					return fmt.Errorf("%s has %d BIRD routes, metrics %v", dst, len(metrics), metrics)
				}
			}
		}
		return nil
	})
}
