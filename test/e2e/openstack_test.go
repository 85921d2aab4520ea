package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

// What networking-calico's full resync writes into FelixConfiguration default, plus the
// reporting interval an operator must set (calico-startup writes 0, which disables the agent
// status Neutron needs to bind ports).
const openstackFelixConfig = `apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata: {name: default}
spec: {endpointReportingEnabled: true, interfacePrefix: tap, reportingInterval: 5s}
`

// TestOpenStack: compute hosts with tap interfaces; WorkloadEndpoints (orchestrator openstack)
// and ossg. NetworkPolicies written as networking-calico writes them; security groups enforced
// across hosts; port status keys turn up (and down with the tap); agent status reported.
func TestOpenStack(t *testing.T) {
	requireFelix(t)
	ctx := context.Background()
	s := newSystemWith(t, topo.Options{Hosts: 2, Mode: topo.ModeBGP}, topo.StartOptions{Felix: true}, func(f *topo.Fabric) error {
		return f.Apply(ctx, openstackFelixConfig)
	})
	web := uuid.NewString()
	if err := s.WriteSecurityGroup(s.ctx, web, []topo.SGRule{
		{Direction: "ingress", Protocol: 6, Port: 22, RemoteGroup: web},
		{Direction: "ingress", Protocol: "ICMP"},
		{Direction: "egress"},
	}); err != nil {
		t.Fatal(err)
	}
	vm1 := s.vm(s.Host(1), "vm1", "10.65.250.11", map[string]string{web: "web"})
	vm2 := s.vm(s.Host(2), "vm2", "10.65.250.12", map[string]string{web: "web"})
	vm3 := s.vm(s.Host(2), "vm3", "10.65.250.13", nil)
	probe := func(from, to *topo.VM, proto string, port int, want bool) topo.Probe {
		return toAddr(from.NS, from.Name, to.IP, to.Name, proto, port, want)
	}
	s.expect(30*time.Second,
		probe(vm1, vm2, "tcp", 22, true), probe(vm2, vm1, "tcp", 22, true), probe(vm1, vm2, "icmp", 0, true),
		probe(vm1, vm2, "tcp", 80, false), probe(vm3, vm1, "tcp", 22, false), probe(vm1, vm3, "tcp", 22, false),
		probe(vm3, vm2, "icmp", 0, false))

	for _, vm := range []*topo.VM{vm1, vm2, vm3} {
		s.eventually(30*time.Second, vm.Name+" port status up", portStatus(s, vm, "up"))
	}
	s.eventually(30*time.Second, "agent status", func() error {
		var st struct {
			Time        string  `json:"time"`
			Uptime      float64 `json:"uptime"`
			FirstUpdate *bool   `json:"first_update"`
		}
		found, err := s.GetJSON(s.ctx, s.Host(2).AgentStatusKey(), &st)
		if err != nil || !found {
			return fmt.Errorf("no agent status (%v)", err)
		}
		if _, err := time.Parse(time.RFC3339, st.Time); err != nil || st.FirstUpdate == nil {
			return fmt.Errorf("bad agent status %+v", st)
		}
		return nil
	})

	if _, err := s.Host(2).Exec(s.ctx, "ip", "link", "set", vm2.Tap, "down"); err != nil {
		t.Fatal(err)
	}
	s.eventually(30*time.Second, "vm2 port status down", portStatus(s, vm2, "down"))
	if _, err := s.Host(2).Exec(s.ctx, "ip", "link", "set", vm2.Tap, "up"); err != nil {
		t.Fatal(err)
	}
	s.eventually(30*time.Second, "vm2 port status up again", portStatus(s, vm2, "up"))
	s.expect(20*time.Second, probe(vm1, vm2, "tcp", 22, true))
}

// vm adds a VM with servers on ports 22 and 80.
func (s *system) vm(h *topo.Host, name, ip string, sgs map[string]string) *topo.VM {
	s.t.Helper()
	vm, err := h.AddVM(s.ctx, name, netip.MustParseAddr(ip), sgs)
	if err != nil {
		s.t.Fatalf("adding VM %s: %v", name, err)
	}
	s.serve(vm.NS, name, 22, 80)
	return vm
}

func portStatus(s *system, vm *topo.VM, want string) func() error {
	return func() error {
		var st struct {
			Status string `json:"status"`
		}
		found, err := s.GetJSON(s.ctx, vm.PortStatusKey(), &st)
		switch {
		case err != nil:
			return err
		case !found:
			return fmt.Errorf("no key %s", vm.PortStatusKey())
		case st.Status != want:
			return fmt.Errorf("%s: status %q, want %q", vm.PortStatusKey(), st.Status, want)
		}
		return nil
	}
}
