package dataplane

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// udpOutcome sends datagrams from ns to addr:port and says what came back: "answer" (the
// echo), "refused" (an ICMP port unreachable: a reject) or "nothing" (dropped).
func udpOutcome(t *testing.T, ns *netnstest.NS, addr string, port int) string {
	t.Helper()
	out := "nothing"
	ns.Do(t, func() {
		c, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.ParseIP(addr), Port: port})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for range 3 {
			_ = c.SetDeadline(time.Now().Add(300 * time.Millisecond))
			if _, err := c.Write([]byte("hi")); errors.Is(err, syscall.ECONNREFUSED) {
				out = "refused"
				return
			}
			buf := make([]byte, 8)
			_, err := c.Read(buf)
			switch {
			case err == nil:
				out = "answer"
				return
			case errors.Is(err, syscall.ECONNREFUSED):
				out = "refused"
				return
			}
		}
	})
	return out
}

// serviceTopology is a host with workload a and a fabric router that holds a "service" address
// (198.19.96.10, in the service CIDR 198.19.96.0/24) and an ordinary one (198.18.0.2), and
// routes the workloads back to the host.
func serviceTopology(t *testing.T) (*topology, *netnstest.NS) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	tp.fabric.Exec(t, "ip", "addr", "add", "198.19.96.10/32", "dev", "eth0")
	tp.fabric.Exec(t, "ip", "route", "add", "10.65.0.0/16", "via", "198.18.0.1")
	listenUDP(t, tp.fabric, "198.19.96.10", 7000) // not 0.0.0.0: replies must come from the address asked
	listenUDP(t, tp.fabric, "198.18.0.2", 7000)
	return tp, a
}

var serviceCIDRs = calc.ServiceCIDRsUpdate{CIDRs: []string{"198.19.96.0/24", "fd5c:96::/112"}}

// TestKernelServiceLoopPrevention sends real UDP from a workload to an address in a service CIDR
// of BGPConfiguration default that the default route leads to (the fabric, standing for the
// router that would send it back): Drop (the default) drops it, Reject answers with port
// unreachable, Disabled forwards it. Traffic to other addresses, and the host's own traffic to
// the service CIDR (Project Calico blocks only forwarded traffic), always passes; without
// service CIDRs nothing is blocked.
func TestKernelServiceLoopPrevention(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setting rules.LoopAction
		want    string
	}{
		{"Drop", rules.LoopDrop, "nothing"}, {"Reject", rules.LoopReject, "refused"}, {"Disabled", rules.LoopDisabled, "answer"},
	} {
		t.Run("ServiceLoopPrevention="+tc.name, func(t *testing.T) {
			tp, a := serviceTopology(t)
			k := startDataplane(t, tp, Config{ServiceLoopPrevention: tc.setting}, egressAll(), kwep("a", ifA, ipA))
			if got := udpOutcome(t, a, "198.19.96.10", 7000); got != "answer" {
				t.Fatalf("before the BGPConfiguration: %s to the service address, want answer", got)
			}
			k.send(serviceCIDRs)
			check(t, "with service CIDRs",
				expectation{"workload to service address is " + tc.want, func() bool { return udpOutcome(t, a, "198.19.96.10", 7000) == tc.want }, true},
				expectation{"workload to another address answers", func() bool { return udpOutcome(t, a, "198.18.0.2", 7000) == "answer" }, true},
				expectation{"host to service address answers", func() bool { return udpOutcome(t, tp.host, "198.19.96.10", 7000) == "answer" }, true})
			k.send(calc.ServiceCIDRsUpdate{})
			if got := udpOutcome(t, a, "198.19.96.10", 7000); got != "answer" {
				t.Errorf("after the service CIDRs went: %s to the service address, want answer", got)
			}
		})
	}
}

// TestServiceLoopChainPerVersion: each table blocks the service CIDRs of its version, at the
// end of cali-FORWARD, with the configured verdict; Disabled leaves no chain and no jump.
func TestServiceLoopChainPerVersion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setting rules.LoopAction
		verdict string
	}{{"Drop", rules.LoopDrop, "drop"}, {"Reject", rules.LoopReject, "reject"}, {"Disabled", rules.LoopDisabled, ""}} {
		h := newHarness(t, Config{Hostname: "host1", IPv6Support: true, ServiceLoopPrevention: tc.setting})
		h.send(calc.ServiceCIDRsUpdate{CIDRs: []string{"198.19.97.0/24", "fd5c:96::/112", "198.19.96.0/24", "not-a-cidr"}})
		want := []string{"ip daddr 198.19.96.0/24 " + tc.verdict + "\nip daddr 198.19.97.0/24 " + tc.verdict, "ip6 daddr fd5c:96::/112 " + tc.verdict}
		for i := range 2 {
			got := strings.TrimSpace(h.chainRulesIn(i, "filter-cali-cidr-block"))
			fwd := h.chainRulesIn(i, "filter-cali-FORWARD")
			if tc.verdict == "" {
				if got != "" || strings.Contains(fwd, "cidr-block") {
					t.Errorf("%s: table %d has a cidr-block chain or jump:\n%s", tc.name, i, h.fake.Dump())
				}
				continue
			}
			if got != want[i] {
				t.Errorf("%s: table %d cali-cidr-block:\n%s\nwant\n%s", tc.name, i, got, want[i])
			}
			lines := strings.Split(strings.TrimSpace(fwd), "\n")
			if last := lines[len(lines)-1]; last != "jump filter-cali-cidr-block" {
				t.Errorf("%s: table %d cali-FORWARD ends with %q", tc.name, i, last)
			}
		}
	}
}

// TestKernelNATOutgoingExclusions sends real UDP from a workload of a natOutgoing pool to the
// fabric's address, which is a Calico host's address (HostMetadata), and to an address of no
// host: with IPPoolsOnly (the default) both are masqueraded; with IPPoolsAndHostIPs the host's
// address sees the workload's own address.
func TestKernelNATOutgoingExclusions(t *testing.T) {
	for _, tc := range []struct {
		name           string
		exclude        bool
		toHost, toElse string
	}{
		{"IPPoolsOnly", false, "198.18.0.1", "198.18.0.1"},
		{"IPPoolsAndHostIPs", true, ipA, "198.18.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp, a := serviceTopology(t)
			srvHost := listenUDP(t, tp.fabric, "198.18.0.2", 7001)
			srvElse := listenUDP(t, tp.fabric, "198.19.96.10", 7001)
			fabricHost := calc.HostMetadataUpdate{Host: &calc.HostMetadata{Hostname: "fabric", IPv4Addr: pfx("198.18.0.2/24")}}
			startDataplane(t, tp, Config{NATOutgoingExcludeHosts: tc.exclude}, egressAll(), kwep("a", ifA, ipA), natPool(false), fabricHost)
			for _, c := range []struct {
				srv        *udpServer
				addr, want string
			}{{srvHost, "198.18.0.2", tc.toHost}, {srvElse, "198.19.96.10", tc.toElse}} {
				if !canUDP(t, a, "", c.addr, 7001) {
					t.Fatalf("no answer from %s", c.addr)
				}
				if got := c.srv.lastPeer().Addr().String(); got != c.want {
					t.Errorf("%s saw the workload's traffic from %s, want %s", c.addr, got, c.want)
				}
			}
		})
	}
}

// TestNATOutgoingExclusionsRules: with IPPoolsAndHostIPs the NAT outgoing rules of both
// versions also skip the all-hosts set, which holds every host's address of that version.
func TestNATOutgoingExclusionsRules(t *testing.T) {
	h := newHarness(t, Config{Hostname: "host1", IPv6Support: true, NATOutgoingExcludeHosts: true})
	h.send(natPool(false), calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "p6", CIDR: pfx("fd5c::/48"), NATOutgoing: true}},
		calc.HostMetadataUpdate{Host: &calc.HostMetadata{Hostname: "h2", IPv4Addr: pfx("198.18.0.2/24"), IPv6Addr: netip.MustParsePrefix("fd00:198:18::2/64")}})
	dump := h.fake.Dump()
	for i, set := range []string{"@cali40all-hosts-net", "@cali60all-hosts-net"} {
		if r := h.chainRulesIn(i, "nat-cali-nat-outgoing"); !strings.Contains(r, "daddr != "+set) {
			t.Errorf("table %d NAT outgoing does not skip %s:\n%s", i, set, r)
		}
	}
	for _, member := range []string{"198.18.0.2", "fd00:198:18::2"} {
		if !strings.Contains(dump, member) {
			t.Errorf("the all-hosts sets lack %s:\n%s", member, dump)
		}
	}
}
