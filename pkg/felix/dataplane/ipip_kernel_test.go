package dataplane

import (
	"net"
	"regexp"
	"strconv"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// sendIPIP sends n IP-in-IP packets (protocol 4, an inner IPv4 header as payload) from src in
// the fabric to the host's 198.18.0.1.
func sendIPIP(t *testing.T, tp *topology, src string, n int) {
	t.Helper()
	inner := []byte{0x45, 0, 0, 20, 0, 0, 0, 0, 64, 1, 0, 0, 10, 65, 1, 1, 10, 65, 0, 1}
	tp.fabric.Do(t, func() {
		c, err := net.DialIP("ip4:4", &net.IPAddr{IP: net.ParseIP(src)}, &net.IPAddr{IP: net.ParseIP("198.18.0.1")})
		if err != nil {
			t.Fatalf("raw IPIP socket: %v", err)
		}
		defer c.Close()
		for range n {
			if _, err := c.Write(inner); err != nil {
				t.Fatalf("sending IPIP from %s: %v", src, err)
			}
		}
	})
}

var ipipDropCounter = regexp.MustCompile(`meta l4proto ipencap counter packets (\d+) bytes \d+ drop`)

// ipipDrops reads the counter of the rule dropping IP-in-IP from unknown sources.
func ipipDrops(t *testing.T, tp *topology) int {
	t.Helper()
	out := tp.host.Exec(t, "nft", "list", "chain", "ip", DefaultTable, "filter-cali-INPUT")
	m := ipipDropCounter.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no IPIP drop rule in filter-cali-INPUT:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestKernelIPIPFromHostsOnly: with an IPIP pool, IP-in-IP addressed to the host from a known
// host's address (all-hosts-net) passes filter INPUT, and from any other address is dropped and
// counted by the drop rule; a new host's address is accepted once its metadata arrives. (The
// kernel here has no ipip driver, so the dataplane reports tunl0 missing; the rules do not
// depend on it, as in Project Calico.)
func TestKernelIPIPFromHostsOnly(t *testing.T) {
	tp := newTopology(t)
	tp.fabric.Exec(t, "ip", "addr", "add", "198.18.0.9/24", "dev", "eth0")
	host := func(name, a string) calc.Update {
		return calc.HostMetadataUpdate{Host: &calc.HostMetadata{Hostname: name, IPv4Addr: pfx(a)}}
	}
	k := startDataplane(t, tp, Config{},
		calc.ConfigUpdate{HostIPv4: pfx("198.18.0.1/24"), IPIPTunnelAddr: addr("10.65.0.1")},
		calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "ip", CIDR: pfx("10.65.0.0/16"), VXLANMode: "Never", IPIPMode: "Always"}},
		host("host1", "198.18.0.1/24"), host("host2", "198.18.0.2/24"))
	if p := k.dp.Problems(); p != "" {
		t.Logf("dataplane reports: %s", p)
	}
	sendIPIP(t, tp, "198.18.0.2", 3)
	if n := ipipDrops(t, tp); n != 0 {
		t.Errorf("IPIP from a known host dropped: counter %d", n)
	}
	sendIPIP(t, tp, "198.18.0.9", 2)
	if n := ipipDrops(t, tp); n != 2 {
		t.Errorf("IPIP from an unknown address: drop counter %d, want 2", n)
	}
	k.send(host("host3", "198.18.0.9/24"))
	sendIPIP(t, tp, "198.18.0.9", 4)
	if n := ipipDrops(t, tp); n != 2 {
		t.Errorf("IPIP from a host added later: drop counter %d, want still 2", n)
	}
}
