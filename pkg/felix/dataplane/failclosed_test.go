package dataplane

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// icmpProbe is one ICMP or ICMPv6 message sent from a workload, and whether policy should let
// it reach the destination.
type icmpProbe struct {
	typ, code uint8
	want      bool
}

// icmpSink records the markers of the ICMP messages a raw socket in a namespace receives (raw
// sockets get a copy of every ICMP message, whatever the kernel then does with it).
type icmpSink struct {
	conn net.PacketConn
	mu   sync.Mutex
	got  map[string]bool
}

func icmpNetwork(v6 bool) string {
	if v6 {
		return "ip6:ipv6-icmp"
	}
	return "ip4:icmp"
}

func listenICMP(t *testing.T, ns *netnstest.NS, v6 bool) *icmpSink {
	t.Helper()
	s := &icmpSink{got: map[string]bool{}}
	ns.Do(t, func() {
		c, err := net.ListenPacket(icmpNetwork(v6), "")
		if err != nil {
			t.Fatal(err)
		}
		s.conn = c
	})
	t.Cleanup(func() { _ = s.conn.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, _, err := s.conn.ReadFrom(buf)
			if err != nil {
				return
			}
			if n > 8 {
				s.mu.Lock()
				s.got[strings.TrimRight(string(buf[8:n]), "\x00")] = true
				s.mu.Unlock()
			}
		}
	}()
	return s
}

func (s *icmpSink) received(marker string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[marker]
}

// icmpMessage builds an ICMP(v6) message: type, code, checksum (IPv4 only: the kernel fills in
// ICMPv6's), a unique identifier and the marker as payload (padded so every type is long enough).
func icmpMessage(v6 bool, typ, code uint8, id uint16, marker string) []byte {
	b := make([]byte, 8+32)
	b[0], b[1] = typ, code
	binary.BigEndian.PutUint16(b[4:], id)
	binary.BigEndian.PutUint16(b[6:], 1)
	copy(b[8:], marker)
	if !v6 {
		var sum uint32
		for i := 0; i < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
		for sum > 0xffff {
			sum = sum>>16 + sum&0xffff
		}
		binary.BigEndian.PutUint16(b[2:], ^uint16(sum))
	}
	return b
}

// checkICMP sends the probes from ns to dst and checks which reach sink. Probes that should be
// dropped go first; once every probe that should pass has arrived (same path, sent later), the
// dropped ones would have arrived too, so their absence is checked without a timeout.
func checkICMP(t *testing.T, ns *netnstest.NS, sink *icmpSink, v6 bool, dst string, probes []icmpProbe) {
	t.Helper()
	var conn net.PacketConn
	ns.Do(t, func() {
		c, err := net.ListenPacket(icmpNetwork(v6), "")
		if err != nil {
			t.Fatal(err)
		}
		conn = c
	})
	defer conn.Close()
	markers := make([]string, len(probes))
	for _, pass := range []bool{false, true} {
		for i, p := range probes {
			if p.want != pass {
				continue
			}
			markers[i] = fmt.Sprintf("probe-%s-%d-%d-%d", dst, p.typ, p.code, i)
			msg := icmpMessage(v6, p.typ, p.code, uint16(0x4000+i), markers[i])
			if _, err := conn.WriteTo(msg, &net.IPAddr{IP: net.ParseIP(dst)}); err != nil {
				t.Fatalf("sending ICMP %d/%d: %v", p.typ, p.code, err)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for i, p := range probes {
		for p.want && !sink.received(markers[i]) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	for i, p := range probes {
		if got := sink.received(markers[i]); got != p.want {
			t.Errorf("ICMP type %d code %d to %s: delivered %v, want %v", p.typ, p.code, dst, got, p.want)
		}
	}
}

// TestKernelNotICMPTypeAndCode: a Deny rule with notICMP {type, code} drops the ICMP messages
// that are not (that type with that code), in its own family only, as Project Calico's
// iptables and BPF dataplanes do; the ICMP message with that type and code, and non-ICMP
// traffic, go on to the next rule (here an allow). Before the fix the rule was left out and
// everything got through.
func TestKernelNotICMPTypeAndCode(t *testing.T) {
	const ip6A, ip6B = "fd5c::a", "fd5c::b"
	tp := newTopology(t)
	tp.host.Exec(t, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	tp.addWorkloadV6(t, "a", ifA, ip6A)
	tp.addWorkloadV6(t, "b", ifB, ip6B)
	sink4, sink6 := listenICMP(t, b, false), listenICMP(t, b, true)
	listenTCP(t, b, ipB, 8080)
	code0 := u8(0)
	pol := gnpID("not-icmp")
	startDataplane(t, tp, Config{IPv6Support: true},
		policy(pol, []calc.Rule{
			{Action: calc.RuleDeny, Protocol: 1, IPVersion: 4, NotICMP: &calc.ICMPMatch{Type: 8, Code: code0}},
			{Action: calc.RuleDeny, Protocol: 58, IPVersion: 6, NotICMP: &calc.ICMPMatch{Type: 128, Code: code0}},
			allow(),
		}, nil),
		profile("p", nil, []calc.Rule{allow()}),
		wep("a", ifA, []string{ipA + "/32"}, withV6(ip6A+"/128"), withProfiles("p")),
		wep("b", ifB, []string{ipB + "/32"}, withV6(ip6B+"/128"), withProfiles("p"), withTiers(tier("default", ids(pol), nil))))
	checkICMP(t, a, sink4, false, ipB, []icmpProbe{
		{8, 0, true},   // echo request, code 0: the excluded type and code
		{8, 3, false},  // the type with another code
		{13, 0, false}, // another type with the code
		{13, 5, false},
	})
	checkICMP(t, a, sink6, true, ip6B, []icmpProbe{
		{128, 0, true},
		{128, 1, false},
		{139, 0, false},
	})
	if !canTCP(t, a, ipB, 8080) {
		t.Error("TCP was dropped by a notICMP rule")
	}
}

// TestKernelUnenforceableRuleFailsClosed: a Deny rule the renderer cannot express (ports with
// a protocol that has none), or one calc could not interpret, drops the traffic that reaches
// it instead of being skipped (which let it through to the allow behind it).
func TestKernelUnenforceableRuleFailsClosed(t *testing.T) {
	tp := newTopology(t)
	a := tp.addWorkload(t, "a", ifA, ipA)
	b := tp.addWorkload(t, "b", ifB, ipB)
	listenTCP(t, b, ipB, 8080)
	pol := gnpID("deny-then-allow")
	tcp := func() bool { return canTCP(t, a, ipB, 8080) }
	k := startDataplane(t, tp, Config{},
		policy(pol, []calc.Rule{{Action: calc.RuleDeny, Protocol: 47, DstPorts: ports(1)}, allow()}, nil),
		egressAll(), kwep("a", ifA, ipA), kwep("b", ifB, ipB, tier("default", ids(pol), nil)))
	check(t, "deny rule the renderer cannot express", expectation{"tcp 8080", tcp, false})

	k.send(policy(pol, []calc.Rule{{Action: calc.RuleDeny, Invalid: "uninterpretable", RuleID: "x"}, allow()}, nil))
	check(t, "rule calc could not interpret", expectation{"tcp 8080", tcp, false})

	k.send(policy(pol, []calc.Rule{allow()}, nil))
	check(t, "the allow alone", expectation{"tcp 8080", tcp, true})
}
