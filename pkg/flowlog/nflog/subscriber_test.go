package nflog_test

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/nflog"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// Rules in the server's namespace as felix renders them (log prefix, snaplen 80, group 1
// for ingress) over real packets from a client namespace, both families: the subscriber
// sees each packet's prefix, length and 5-tuple.
const serverRules = `table inet flowtest {
	chain input {
		type filter hook input priority filter; policy accept;
		ct state established,related accept
		icmp type echo-request log prefix "API0|gnp/allow-ping" snaplen 80 group 1 accept
		icmpv6 type echo-request log prefix "API0|gnp/allow-ping" snaplen 80 group 1 accept
		tcp dport 8080 log prefix "API1|np/prod/allow-web" snaplen 80 group 1 accept
		udp dport 5353 log prefix "DPI|security" snaplen 80 group 1 drop
		tcp dport 9090 log prefix "DPI0|gnp/other-group" snaplen 80 group 7 drop
	}
}
`

type pair struct{ client, server *netnstest.NS }

func newPair(t *testing.T) pair {
	netnstest.Require(t, "nft", "ping")
	p := pair{client: netnstest.New(t, "cli"), server: netnstest.New(t, "srv")}
	netnstest.Link(t, p.client, p.server, "eth0",
		[]string{"10.65.0.1/24", "fd5c::1/64"}, []string{"10.65.0.2/24", "fd5c::2/64"})
	return p
}

func loadRules(t *testing.T, ns *netnstest.NS, rules string) {
	t.Helper()
	if out, err := ns.Try("sh", "-c", "nft -f - <<'EOF'\n"+rules+"EOF\n"); err != nil {
		t.Fatalf("nft -f: %v\n%s", err, out)
	}
}

func TestSubscriberSeesPrefixAndTuple(t *testing.T) {
	p := newPair(t)
	loadRules(t, p.server, serverRules)
	got := make(chan nflog.Packet, 64)
	sub, err := nflog.Subscribe(context.Background(), nflog.Config{Group: 1, NetNS: p.server.FD, Log: zerolog.Nop()},
		func(pk nflog.Packet) { got <- pk })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	var want []nflog.Packet
	for _, fam := range []struct{ cli, srv string }{{"10.65.0.1", "10.65.0.2"}, {"fd5c::1", "fd5c::2"}} {
		cli, srv := netip.MustParseAddr(fam.cli), netip.MustParseAddr(fam.srv)
		ipHdr := 20
		icmpType, proto := uint16(8), flowlog.ProtoICMP
		if cli.Is6() {
			ipHdr, icmpType, proto = 40, 128, flowlog.ProtoICMPv6
		}
		p.client.Exec(t, "ping", "-c1", "-W2", fam.srv)
		want = append(want, nflog.Packet{Group: 1, Prefix: "API0|gnp/allow-ping", Length: ipHdr + 8 + 56,
			Tuple: flowlog.Tuple{Src: cli, Dst: srv, Proto: proto, DstPort: icmpType << 8}})

		sport := dialTCP(t, p.client, netip.AddrPortFrom(srv, 8080))
		want = append(want, nflog.Packet{Group: 1, Prefix: "API1|np/prod/allow-web",
			Tuple: flowlog.Tuple{Src: cli, Dst: srv, Proto: flowlog.ProtoTCP, SrcPort: sport, DstPort: 8080}})

		sport = sendUDP(t, p.client, netip.AddrPortFrom(srv, 5353), "hello")
		want = append(want, nflog.Packet{Group: 1, Prefix: "DPI|security", Length: ipHdr + 8 + 5,
			Tuple: flowlog.Tuple{Src: cli, Dst: srv, Proto: flowlog.ProtoUDP, SrcPort: sport, DstPort: 5353}})
		dialTCP(t, p.client, netip.AddrPortFrom(srv, 9090)) // group 7: never seen here
	}

	for _, w := range want {
		pk := waitFor(t, got, w)
		if w.Tuple.Proto == flowlog.ProtoICMP || w.Tuple.Proto == flowlog.ProtoICMPv6 {
			w.Tuple.SrcPort = pk.Tuple.SrcPort // the echo identifier is ping's choice
		}
		if w.Length == 0 {
			w.Length = pk.Length // a SYN's options are the stack's choice
			if pk.Length < 40 {
				t.Errorf("SYN of %d bytes", pk.Length)
			}
		}
		if pk != w {
			t.Errorf("got  %+v\nwant %+v", pk, w)
		}
	}
	if st := sub.Stats(); st.ParseErrors != 0 || st.Overruns != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A second subscriber cannot take a group that is bound.
func TestSubscribeGroupTaken(t *testing.T) {
	p := newPair(t)
	sub, err := nflog.Subscribe(context.Background(), nflog.Config{Group: 2, NetNS: p.server.FD}, func(nflog.Packet) {})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if s2, err := nflog.Subscribe(context.Background(), nflog.Config{Group: 2, NetNS: p.server.FD}, func(nflog.Packet) {}); err == nil {
		s2.Close()
		t.Fatal("second subscriber to group 2 accepted")
	}
	// After Close the group is free again.
	sub.Close()
	s3, err := nflog.Subscribe(context.Background(), nflog.Config{Group: 2, NetNS: p.server.FD}, func(nflog.Packet) {})
	if err != nil {
		t.Fatalf("group 2 after close: %v", err)
	}
	s3.Close()
}

// waitFor returns the first packet with w's prefix and protocol and family.
func waitFor(t *testing.T, got <-chan nflog.Packet, w nflog.Packet) nflog.Packet {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case pk := <-got:
			if pk.Group != 1 || strings.Contains(pk.Prefix, "other-group") {
				t.Errorf("packet of another group: %+v", pk)
			}
			if pk.Prefix == w.Prefix && pk.Tuple.Proto == w.Tuple.Proto && pk.Tuple.Src == w.Tuple.Src {
				return pk
			}
		case <-deadline:
			t.Fatalf("no packet like %+v", w)
		}
	}
}

// dialTCP sends a SYN from the client's namespace from a port it picks first (the
// connection may be refused or dropped) and returns that port.
func dialTCP(t *testing.T, ns *netnstest.NS, to netip.AddrPort) (sport uint16) {
	t.Helper()
	ns.Do(t, func() {
		l, err := net.ListenTCP("tcp", &net.TCPAddr{})
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		d := net.Dialer{Timeout: 300 * time.Millisecond, LocalAddr: &net.TCPAddr{Port: port}}
		if c, err := d.Dial("tcp", to.String()); err == nil {
			c.Close()
		}
		sport = uint16(port)
	})
	return sport
}

func sendUDP(t *testing.T, ns *netnstest.NS, to netip.AddrPort, msg string) (sport uint16) {
	t.Helper()
	ns.Do(t, func() {
		c, err := net.Dial("udp", to.String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		sport = uint16(c.LocalAddr().(*net.UDPAddr).Port)
	})
	return sport
}
