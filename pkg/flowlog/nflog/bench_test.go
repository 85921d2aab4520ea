package nflog_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/flowlog/nflog"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// BenchmarkDeniedPacket measures the cost of an NFLOG statement on the packet path in the
// worst case: every packet of a denied flow is new (a dropped packet never confirms its
// conntrack entry), so every one is logged. One op is one 64-byte UDP datagram sent from a
// client namespace and dropped by the server's input chain, with and without `log prefix
// ... group 1` before the drop, counted until the kernel processed it (the drop rule's
// counter) and, with the log, until the subscriber parsed it (or the kernel reported it
// lost). Run: go test -run XXX -bench DeniedPacket ./pkg/flowlog/nflog/
func BenchmarkDeniedPacket(b *testing.B) {
	for _, withLog := range []bool{false, true} {
		name := "nolog"
		if withLog {
			name = "log"
		}
		b.Run(name, func(b *testing.B) { benchDenied(b, withLog) })
	}
}

func benchDenied(b *testing.B, withLog bool) {
	netnstest.Require(b, "nft")
	cli, srv := netnstest.New(b, "bcli"), netnstest.New(b, "bsrv")
	netnstest.Link(b, cli, srv, "eth0", []string{"10.65.0.1/24"}, []string{"10.65.0.2/24"})
	stmt := "counter drop"
	if withLog {
		stmt = `log prefix "DPI|bench" snaplen 80 group 1 counter drop`
	}
	rules := "table inet bench { chain input { type filter hook input priority filter; policy accept;\n" +
		"ct state established,related accept\nudp dport 9999 " + stmt + "\n}\n}\n"
	if out, err := srv.Try("sh", "-c", "nft -f - <<'EOF'\n"+rules+"EOF\n"); err != nil {
		b.Fatalf("nft: %v\n%s", err, out)
	}
	var seen atomic.Int64
	sub, err := nflog.Subscribe(context.Background(), nflog.Config{Group: 1, NetNS: srv.FD, ReadBuffer: 4 << 20},
		func(nflog.Packet) { seen.Add(1) })
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	var conn net.Conn
	cli.Do(b, func() { conn, err = net.Dial("udp", "10.65.0.2:9999") })
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	msg := make([]byte, 64-28)
	b.ResetTimer()
	for range b.N {
		_, _ = conn.Write(msg)
	}
	waitDropped(b, srv, b.N)
	for withLog && seen.Load()+int64(sub.Stats().Overruns) < int64(b.N) && sub.Stats().Overruns == 0 {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	if withLog {
		b.ReportMetric(float64(sub.Stats().Overruns), "overruns")
	}
}

// waitDropped waits until the drop rule's counter reaches n packets.
func waitDropped(b *testing.B, ns *netnstest.NS, n int) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		out, _ := ns.Try("nft", "list", "chain", "inet", "bench", "input")
		_, after, ok := strings.Cut(out, "counter packets ")
		if !ok {
			continue
		}
		got, _ := strconv.Atoi(strings.Fields(after)[0])
		if got >= n {
			return
		}
	}
	b.Fatalf("the kernel did not process %d packets", n)
}
