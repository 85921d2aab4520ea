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

// The OpenStack tests (openstack_*_test.go) check calico-host against what networking-calico
// writes and reads (reference/openstack-contract.md): the Neutron driver's WorkloadEndpoints,
// ossg. NetworkPolicies and cluster configuration are written by topo as raw JSON with its
// compare-and-swap transactions, Nova's tap interfaces are veths into VM namespaces, and the
// status keys the driver reads back are checked in etcd.

// vmPorts are the ports every VM serves (TCP and UDP).
var vmPorts = []int{22, 80, 443, 5353, 8080, 8081}

// newOpenStack builds a fabric whose etcd holds the cluster configuration networking-calico
// writes before any agent starts, and whose felixes report their status every 2 s on a 6 s
// lease (an operator's felix.cfg; the contract's defaults are 30 s and 90 s). setup, if set,
// runs for every host before its daemons start.
func newOpenStack(t *testing.T, o topo.Options, setup func(*topo.Host) error) *system {
	t.Helper()
	return newSystemWith(t, o, topo.StartOptions{Felix: true}, func(f *topo.Fabric) error {
		for _, h := range f.Hosts {
			h.FelixEnv = append(h.FelixEnv, "FELIX_REPORTINGINTERVALSECS=2", "FELIX_REPORTINGTTLSECS=6")
			if setup != nil {
				if err := setup(h); err != nil {
					return err
				}
			}
		}
		return f.ProvideOpenStackConfig(context.Background())
	})
}

// TestOpenStack: compute hosts with tap interfaces; WorkloadEndpoints (orchestrator openstack)
// and ossg. NetworkPolicies written as networking-calico writes them; security groups enforced
// across hosts; port status keys turn up (and down with the tap); agent status reported.
func TestOpenStack(t *testing.T) {
	requireBinaries(t)
	s := newOpenStack(t, topo.Options{Hosts: 2, Mode: topo.ModeBGP}, nil)
	web := uuid.NewString()
	s.securityGroup(topo.SecurityGroup{ID: web, Rules: []topo.SGRule{
		rule("ingress", "tcp", 22, 22, web, ""),
		{Direction: "ingress", Protocol: "icmp"},
		{Direction: "egress"},
	}})
	vm1 := s.vm(s.Host(1), "vm1", "10.65.250.11", map[string]string{web: "web"})
	vm2 := s.vm(s.Host(2), "vm2", "10.65.250.12", map[string]string{web: "web"})
	vm3 := s.vm(s.Host(2), "vm3", "10.65.250.13", nil)
	s.expect(30*time.Second,
		vmProbe(vm1, vm2, "tcp", 22, true), vmProbe(vm2, vm1, "tcp", 22, true), vmProbe(vm1, vm2, "icmp", 0, true),
		vmProbe(vm1, vm2, "tcp", 80, false), vmProbe(vm3, vm1, "tcp", 22, false), vmProbe(vm1, vm3, "tcp", 22, false),
		vmProbe(vm3, vm2, "icmp", 0, false))

	for _, vm := range []*topo.VM{vm1, vm2, vm3} {
		s.eventually(30*time.Second, vm.Name+" port status up", portStatus(s, vm, "up"))
	}
	s.eventually(30*time.Second, "agent status", agentStatus(s, s.Host(2), nil))

	if _, err := s.Host(2).Exec(s.ctx, "ip", "link", "set", vm2.Tap, "down"); err != nil {
		t.Fatal(err)
	}
	s.eventually(30*time.Second, "vm2 port status down", portStatus(s, vm2, "down"))
	if _, err := s.Host(2).Exec(s.ctx, "ip", "link", "set", vm2.Tap, "up"); err != nil {
		t.Fatal(err)
	}
	s.eventually(30*time.Second, "vm2 port status up again", portStatus(s, vm2, "up"))
	s.expect(20*time.Second, vmProbe(vm1, vm2, "tcp", 22, true))
}

// sub is the system seen from a subtest (its helpers fail the subtest).
func (s *system) sub(t *testing.T) *system {
	c := *s
	c.t = t
	return &c
}

// vm adds a VM with one IPv4 address and servers on vmPorts.
func (s *system) vm(h *topo.Host, name, ip string, sgs map[string]string) *topo.VM {
	s.t.Helper()
	return s.vmWith(h, name, topo.VMOptions{Port: topo.Port{FixedIPs: []netip.Addr{netip.MustParseAddr(ip)}, SecurityGroups: sgs}})
}

// vmWith adds a VM described by o, with servers on vmPorts.
func (s *system) vmWith(h *topo.Host, name string, o topo.VMOptions) *topo.VM {
	s.t.Helper()
	vm, err := h.AddVMWith(s.ctx, name, o)
	if err != nil {
		s.t.Fatalf("adding VM %s: %v", name, err)
	}
	s.serve(vm.NS, name, vmPorts...)
	return vm
}

// securityGroup writes (or rewrites) a security group's policy.
func (s *system) securityGroup(sg topo.SecurityGroup) {
	s.t.Helper()
	if err := sg.Write(s.ctx, s.Fabric); err != nil {
		s.t.Fatalf("writing security group %s: %v", sg.ID, err)
	}
}

// writeEndpoint rewrites a VM's WorkloadEndpoint after a change to its port.
func (s *system) writeEndpoint(vm *topo.VM) {
	s.t.Helper()
	if err := vm.WriteEndpoint(s.ctx); err != nil {
		s.t.Fatalf("rewriting the endpoint of %s: %v", vm.Name, err)
	}
}

// rule is a Neutron rule with a port range (lo 0: none) and an optional remote.
func rule(direction string, protocol any, lo, hi int, remoteGroup, remotePrefix string) topo.SGRule {
	r := topo.SGRule{Direction: direction, Protocol: protocol, RemoteGroup: remoteGroup, RemotePrefix: remotePrefix}
	if lo != 0 {
		r.PortMin, r.PortMax = topo.Int(lo), topo.Int(hi)
	}
	return r
}

// rule6 is rule with ethertype IPv6.
func rule6(direction string, protocol any, lo, hi int, remoteGroup, remotePrefix string) topo.SGRule {
	r := rule(direction, protocol, lo, hi, remoteGroup, remotePrefix)
	r.Ethertype = "IPv6"
	return r
}

// vmProbe probes a VM's IPv4 address from another VM.
func vmProbe(from, to *topo.VM, proto string, port int, want bool) topo.Probe {
	return toAddr(from.NS, from.Name, to.IP, to.Name, proto, port, want)
}

// vmProbe6 probes a VM's IPv6 address from another VM.
func vmProbe6(from, to *topo.VM, proto string, port int, want bool) topo.Probe {
	return toAddr(from.NS, from.Name, to.IP6, to.Name+"/v6", proto, port, want)
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

// agentStatus checks a host's agent status key as status.py parses it; into, if set, receives
// the value.
func agentStatus(s *system, h *topo.Host, into *topo.AgentStatus) func() error {
	return func() error {
		var st topo.AgentStatus
		found, err := s.GetJSON(s.ctx, h.AgentStatusKey(), &st)
		if err != nil || !found {
			return fmt.Errorf("no agent status at %s (%v)", h.AgentStatusKey(), err)
		}
		if into != nil {
			*into = st
		}
		return st.Check()
	}
}
