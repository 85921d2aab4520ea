package e2e

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

// TestOpenStackSecurityGroups: security groups exactly as networking-calico's policy.py writes
// them, in a region namespace (openstack-region-europe) with felix's OpenstackRegion set.
//   - protocols as names (mapped to 6 and 17), integers (6, 1), numeric strings ("17", as Neutron
//     stores "--protocol 17"), "icmp" with type/code from port_range_min/max, "ipv6-icmp";
//   - port ranges, remote_group_id selectors, remote_ip_prefix nets, in ingress and egress;
//   - ipVersion 6 rules applying to IPv6 only (and IPv4 rules to IPv4 only);
//   - libcalico's namespace scoping: a VM of another namespace carrying the same SG label is
//     neither selected by the policy nor matched by its remote-group rule;
//   - a VM with no security group: all its traffic dropped;
//   - allowed address pairs: reachable, usable as source, other sources dropped (anti-spoofing);
//   - a port whose security groups change and a group whose rules change: enforced live;
//     a deleted group: its members lose what it allowed;
//   - status keys under region-europe only.
func TestOpenStackSecurityGroups(t *testing.T) {
	requireBinaries(t)
	const region = "europe"
	ns := topo.OpenStackNamespaceFor(region)
	s := newOpenStack(t, topo.Options{Hosts: 2, Mode: topo.ModeBGP, IPv6: true}, func(h *topo.Host) error {
		h.SetOpenStackRegion(region)
		return nil
	})
	web, locked, legacy := uuid.NewString(), uuid.NewString(), uuid.NewString()
	sgWeb := topo.SecurityGroup{ID: web, Namespace: ns, Rules: []topo.SGRule{
		rule("ingress", "tcp", 22, 22, web, ""),             // "tcp" -> 6, from group members
		rule6("ingress", "tcp", 22, 22, web, ""),            // the same for IPv6
		rule("ingress", 6, 8000, 8100, "", ""),              // integer protocol, port range, from anywhere
		rule("ingress", "udp", 5353, 5353, "", ""),          // "udp" -> 17
		rule("ingress", "icmp", 8, 0, "", ""),               // ICMP echo request (type 8, code 0)
		rule6("ingress", "ipv6-icmp", 128, -1, "", ""),      // ICMPv6 echo request, any code
		rule("ingress", "tcp", 80, 80, "", "198.18.0.0/24"), // from the hosts' network only
		{Direction: "egress", Ethertype: "IPv4"},
		{Direction: "egress", Ethertype: "IPv6"},
	}}
	sgLocked := topo.SecurityGroup{ID: locked, Namespace: ns, Rules: []topo.SGRule{
		rule("ingress", "icmp", 13, -1, "", ""),                 // ICMP timestamp only: no ping
		rule("egress", "tcp", 8080, 8080, "", "10.65.250.0/24"), // only TCP 8080 to the VM subnet
	}}
	sgLegacy := topo.SecurityGroup{ID: legacy, Namespace: topo.OpenStackNamespace, Rules: []topo.SGRule{
		rule("ingress", "tcp", 443, 443, "", ""),
		{Direction: "ingress", Protocol: 1}, // integer ICMP, any type
		{Direction: "egress"},
	}}
	for _, sg := range []topo.SecurityGroup{sgWeb, sgLocked, sgLegacy} {
		s.securityGroup(sg)
	}

	ip := netip.MustParseAddr
	aap, spoofed := ip("10.65.250.99"), ip("10.65.250.98")
	h1, h2 := s.Host(1), s.Host(2)
	vm1 := s.vmWith(h1, "vm1", topo.VMOptions{Port: topo.Port{FixedIPs: []netip.Addr{ip("10.65.250.11"), ip("fd5c:1:0:fa::11")},
		SecurityGroups: map[string]string{web: "web"}}})
	vm2 := s.vmWith(h2, "vm2", topo.VMOptions{Port: topo.Port{FixedIPs: []netip.Addr{ip("10.65.250.12"), ip("fd5c:1:0:fa::12")},
		AllowedAddressPairs: []netip.Addr{aap}, SecurityGroups: map[string]string{web: "web"}, FQDN: "vm2.example.org",
		QoS: map[string]int64{"ingressBandwidth": 1_000_000_000, "egressBandwidth": 1_000_000_000}},
		ExtraAddrs: []netip.Addr{spoofed}})
	vm3 := s.vmWith(h2, "vm3", topo.VMOptions{Port: topo.Port{FixedIPs: []netip.Addr{ip("10.65.250.13")},
		SecurityGroups: map[string]string{locked: "locked-down"}}})
	vm4 := s.vmWith(h1, "vm4", topo.VMOptions{Port: topo.Port{FixedIPs: []netip.Addr{ip("10.65.250.14")}}})
	vm5 := s.vmWith(h1, "vm5", topo.VMOptions{Namespace: topo.OpenStackNamespace, Port: topo.Port{
		FixedIPs: []netip.Addr{ip("10.65.250.15")}, SecurityGroups: map[string]string{web: "web", legacy: "legacy"}}})

	host1 := toAddr(h1.NS, "host-1", vm2.IP, "vm2", "tcp", 80, true)
	s.expect(40*time.Second,
		// remote group, both directions, across hosts; protocol and port matter
		vmProbe(vm1, vm2, "tcp", 22, true), vmProbe(vm2, vm1, "tcp", 22, true),
		vmProbe(vm1, vm2, "tcp", 8080, true), vmProbe(vm1, vm2, "tcp", 8081, true), vmProbe(vm1, vm2, "tcp", 443, false),
		vmProbe(vm1, vm2, "udp", 5353, true), vmProbe(vm1, vm2, "tcp", 5353, false),
		vmProbe(vm1, vm2, "icmp", 0, true),
		// remote_ip_prefix
		host1, vmProbe(vm1, vm2, "tcp", 80, false),
		// IPv6 rules for IPv6, IPv4 rules for IPv4
		vmProbe6(vm1, vm2, "tcp", 22, true), vmProbe6(vm2, vm1, "tcp", 22, true), vmProbe6(vm1, vm2, "icmp", 0, true),
		vmProbe6(vm1, vm2, "tcp", 8080, false),
		// egress rules with remote_ip_prefix and ports; ICMP type
		vmProbe(vm3, vm2, "tcp", 8080, true), vmProbe(vm3, vm2, "tcp", 8081, false), vmProbe(vm3, vm2, "udp", 5353, false),
		vmProbe(vm1, vm3, "icmp", 0, false), vmProbe(vm1, vm3, "tcp", 22, false),
		// no security group: nothing in or out
		vmProbe(vm4, vm1, "tcp", 8080, false), vmProbe(vm1, vm4, "tcp", 8080, false), vmProbe(vm1, vm4, "icmp", 0, false),
		// another namespace: selected only by its own namespace's policies
		vmProbe(vm1, vm5, "tcp", 443, true), vmProbe(vm1, vm5, "icmp", 0, true), vmProbe(vm1, vm5, "tcp", 22, false),
		vmProbe(vm5, vm2, "tcp", 8080, true), vmProbe(vm5, vm2, "tcp", 22, false),
		// allowed address pair: routed to vm2, a valid source (also for remote-group rules);
		// an address Neutron does not know is dropped
		toAddr(vm1.NS, "vm1", aap, "vm2-aap", "tcp", 22, true),
		srcProbe(vm2, aap, vm1, 8080, true), srcProbe(vm2, aap, vm1, 22, true), srcProbe(vm2, spoofed, vm1, 8080, false),
	)

	for _, vm := range []*topo.VM{vm1, vm2, vm3, vm4, vm5} {
		s.eventually(30*time.Second, vm.Name+" port status up", portStatus(s, vm, "up"))
		if !strings.HasPrefix(vm.PortStatusKey(), "/calico/felix/v2/region-europe/host/") {
			t.Fatalf("status key %s outside the region", vm.PortStatusKey())
		}
	}
	for _, h := range s.Hosts {
		s.eventually(20*time.Second, h.Name+" agent status", agentStatus(s, h, nil))
	}
	if keys, err := s.Keys(s.ctx, topo.FelixHostPrefix("")); err != nil || len(keys) > 0 {
		t.Fatalf("keys under %s with OpenstackRegion set: %v %v", topo.FelixHostPrefix(""), keys, err)
	}

	// The port of vm3 moves from "locked" to "web" (labels replaced on rewrite).
	vm3.Port.SecurityGroups = map[string]string{web: "web"}
	s.writeEndpoint(vm3)
	// "web" gains a rule.
	sgWeb.Rules = append(sgWeb.Rules, rule("ingress", "tcp", 443, 443, "", ""))
	s.securityGroup(sgWeb)
	// "legacy" is deleted in Neutron.
	if err := sgLegacy.Delete(s.ctx, s.Fabric); err != nil {
		t.Fatal(err)
	}
	s.expect(30*time.Second,
		vmProbe(vm1, vm3, "tcp", 22, true), vmProbe(vm1, vm3, "icmp", 0, true), vmProbe(vm3, vm2, "udp", 5353, true),
		vmProbe(vm3, vm2, "tcp", 8081, true),
		vmProbe(vm1, vm2, "tcp", 443, true),
		vmProbe(vm1, vm5, "tcp", 443, false), vmProbe(vm1, vm5, "icmp", 0, false), vmProbe(vm5, vm2, "tcp", 8080, false),
		vmProbe(vm1, vm2, "tcp", 22, true), vmProbe(vm1, vm4, "tcp", 8080, false))

	t.Run("numeric string protocol", func(t *testing.T) {
		// Neutron stores a rule created with "--protocol 17" as the string "17" and
		// networking-calico writes it as "protocol":"17": Project Calico reads that as 17.
		s := s.sub(t)
		numeric := uuid.NewString()
		s.securityGroup(topo.SecurityGroup{ID: numeric, Namespace: ns, Rules: []topo.SGRule{
			rule("ingress", "17", 5353, 5353, "", ""),
			rule("ingress", "6", 22, 22, "", ""),
			{Direction: "egress"},
		}})
		vm6 := s.vmWith(h2, "vm6", topo.VMOptions{Port: topo.Port{FixedIPs: []netip.Addr{ip("10.65.250.16")},
			SecurityGroups: map[string]string{numeric: "numeric"}}})
		s.expect(30*time.Second, vmProbe(vm1, vm6, "udp", 5353, true), vmProbe(vm1, vm6, "tcp", 22, true),
			vmProbe(vm1, vm6, "tcp", 5353, false), vmProbe(vm6, vm1, "tcp", 8080, true))
	})
}

// srcProbe connects from a VM using a given source address.
func srcProbe(from *topo.VM, src netip.Addr, to *topo.VM, port int, want bool) topo.Probe {
	p := vmProbe(from, to, "tcp", port, want)
	p.Src = src
	return p
}
