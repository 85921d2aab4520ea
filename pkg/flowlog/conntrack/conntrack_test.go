package conntrack_test

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
	ct "github.com/ti-mo/conntrack"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/conntrack"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// The server's namespace tracks connections (a ct rule makes conntrack attach there).
const trackRules = `table inet track {
	chain input {
		type filter hook input priority filter; policy accept;
		ct state established,related accept
	}
}
`

type pair struct{ client, server *netnstest.NS }

var families = []struct{ cli, srv string }{{"10.65.0.1", "10.65.0.2"}, {"fd5c::1", "fd5c::2"}}

func newPair(t *testing.T) pair {
	netnstest.Require(t, "nft", "ping", "sysctl")
	p := pair{client: netnstest.New(t, "cli"), server: netnstest.New(t, "srv")}
	netnstest.Link(t, p.client, p.server, "eth0",
		[]string{"10.65.0.1/24", "fd5c::1/64"}, []string{"10.65.0.2/24", "fd5c::2/64"})
	if out, err := p.server.Try("sh", "-c", "nft -f - <<'EOF'\n"+trackRules+"EOF\n"); err != nil {
		t.Fatalf("nft: %v\n%s", err, out)
	}
	var err error
	p.server.Do(t, func() { err = conntrack.EnableAccounting() })
	if err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimSpace(p.server.Exec(t, "sysctl", "-n", "net.netfilter.nf_conntrack_acct")); v != "1" {
		t.Fatalf("nf_conntrack_acct in the server's namespace is %q", v)
	}
	return p
}

func ipHeader(a netip.Addr) uint64 {
	if a.Is4() {
		return 20
	}
	return 40
}

func find(t *testing.T, r *conntrack.Reader, orig flowlog.Tuple) conntrack.Entry {
	t.Helper()
	entries, err := r.Dump()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Orig == orig {
			return e
		}
	}
	t.Fatalf("no entry %v among %v", orig, entries)
	return conntrack.Entry{}
}

// Accounting counts every packet and byte (at layer 3) of UDP exchanges and pings, in each
// direction, both families.
func TestDumpCountsUDPAndICMP(t *testing.T) {
	p := newPair(t)
	r, err := conntrack.Open(p.server.FD)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, fam := range families {
		cli, srv := netip.MustParseAddr(fam.cli), netip.MustParseAddr(fam.srv)
		sport := udpExchange(t, p, netip.AddrPortFrom(srv, 5353), 3, 100, 2, 50)
		e := find(t, r, flowlog.Tuple{Src: cli, Dst: srv, Proto: flowlog.ProtoUDP, SrcPort: sport, DstPort: 5353})
		h := ipHeader(cli) + 8
		if e.OrigPackets != 3 || e.OrigBytes != 3*(h+100) || e.ReplyPackets != 2 || e.ReplyBytes != 2*(h+50) {
			t.Errorf("%s udp counters %+v", fam.cli, e)
		}
		if e.Reply.Src != srv || e.Reply.SrcPort != 5353 || e.Reply.DstPort != sport {
			t.Errorf("%s udp reply tuple %v", fam.cli, e.Reply)
		}

		p.client.Exec(t, "ping", "-c3", "-i0.2", "-W2", fam.srv)
		echo, proto := uint16(8<<8), flowlog.ProtoICMP
		if cli.Is6() {
			echo, proto = 128<<8, flowlog.ProtoICMPv6
		}
		var icmp conntrack.Entry
		entries, _ := r.Dump()
		for _, e := range entries {
			if e.Orig.Proto == proto && e.Orig.Src == cli && e.Orig.DstPort == echo {
				icmp = e
			}
		}
		if icmp.OrigPackets != 3 || icmp.OrigBytes != 3*(h+56) || icmp.ReplyPackets != 3 || icmp.ReplyBytes != 3*(h+56) {
			t.Errorf("%s ping entry %+v", fam.cli, icmp)
		}
	}
}

// A TCP connection is established and assured while open, counts its payload, and is
// finished (TIME_WAIT or later) once closed.
func TestDumpTCPLifecycle(t *testing.T) {
	p := newPair(t)
	r, err := conntrack.Open(p.server.FD)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var l net.Listener
	p.server.Do(t, func() { l, err = net.Listen("tcp", "[::]:8080") })
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		buf := make([]byte, 1000)
		_, _ = io.ReadFull(c, buf)
		_, _ = c.Write(buf[:500])
		_, _ = io.Copy(io.Discard, c)
		c.Close()
	}()
	var c net.Conn
	p.client.Do(t, func() { c, err = net.Dial("tcp", "10.65.0.2:8080") })
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write(make([]byte, 1000))
	_, _ = io.ReadFull(c, make([]byte, 500))
	sport := uint16(c.LocalAddr().(*net.TCPAddr).Port)
	orig := flowlog.Tuple{Src: netip.MustParseAddr("10.65.0.1"), Dst: netip.MustParseAddr("10.65.0.2"),
		Proto: flowlog.ProtoTCP, SrcPort: sport, DstPort: 8080}
	e := find(t, r, orig)
	if e.TCPState != conntrack.TCPStateEstablished || !e.Assured || e.Finished() ||
		e.OrigBytes < 1000+3*40 || e.ReplyBytes < 500+2*40 || e.OrigPackets < 3 {
		t.Errorf("open connection %+v", e)
	}
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for e = find(t, r, orig); !e.Finished() && time.Now().Before(deadline); e = find(t, r, orig) {
		time.Sleep(20 * time.Millisecond)
	}
	if !e.Finished() {
		t.Errorf("closed connection not finished: %+v", e)
	}
}

// Events: a ping makes a New event; deleting the entry makes a Destroy event carrying its
// final counters.
func TestEvents(t *testing.T) {
	p := newPair(t)
	got := make(chan conntrack.Event, 16)
	l, err := conntrack.Listen(context.Background(), p.server.FD, false, func(e conntrack.Event) { got <- e })
	if err != nil {
		t.Fatal(err)
	}
	p.client.Exec(t, "ping", "-c2", "-i0.2", "-W2", "10.65.0.2")
	isPing := func(e conntrack.Entry) bool {
		return e.Orig.Proto == flowlog.ProtoICMP && e.Orig.Src == netip.MustParseAddr("10.65.0.1") && e.Orig.DstPort == 8<<8
	}
	ev := next(t, got, func(e conntrack.Event) bool { return isPing(e.Entry) })
	if ev.Type != conntrack.EventNew {
		t.Errorf("first event %+v", ev)
	}
	deleteEntries(t, p.server, netip.MustParseAddr("10.65.0.1"))
	ev = next(t, got, func(e conntrack.Event) bool { return e.Type == conntrack.EventDestroy && isPing(e.Entry) })
	if ev.Entry.OrigPackets != 2 || ev.Entry.ReplyPackets != 2 {
		t.Errorf("destroy event counters %+v", ev.Entry)
	}
	if err := l.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	select {
	case <-l.Done():
	default:
		t.Error("not done after Close")
	}
}

func next(t *testing.T, got <-chan conntrack.Event, want func(conntrack.Event) bool) conntrack.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-got:
			if want(e) {
				return e
			}
		case <-deadline:
			t.Fatal("no such event")
		}
	}
}

// deleteEntries deletes the server's ICMP entries from src with the library itself.
func deleteEntries(t *testing.T, ns *netnstest.NS, src netip.Addr) {
	t.Helper()
	c, err := ct.Dial(&netlink.Config{NetNS: ns.FD})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	flows, err := c.Dump(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range flows {
		if f.TupleOrig.Proto.ICMPv4 && f.TupleOrig.IP.SourceAddress == src {
			if err := c.Delete(f); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// udpExchange sends n datagrams of size bytes from the client to a server socket at to,
// which answers m datagrams of rsize bytes; it returns the client's port.
func udpExchange(t *testing.T, p pair, to netip.AddrPort, n, size, m, rsize int) uint16 {
	t.Helper()
	var srv *net.UDPConn
	var err error
	p.server.Do(t, func() { srv, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(to)) })
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var cli *net.UDPConn
	p.client.Do(t, func() { cli, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(to)) })
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	buf := make([]byte, 2048)
	var from netip.AddrPort
	for range n {
		if _, err := cli.Write(make([]byte, size)); err != nil {
			t.Fatal(err)
		}
		_ = srv.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, from, err = srv.ReadFromUDPAddrPort(buf); err != nil {
			t.Fatal(err)
		}
	}
	for range m {
		if _, err := srv.WriteToUDPAddrPort(make([]byte, rsize), from); err != nil {
			t.Fatal(err)
		}
		_ = cli.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := cli.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	return from.Port()
}
