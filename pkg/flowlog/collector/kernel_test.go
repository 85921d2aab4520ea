package collector

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/conntrack"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// serverRules renders the tests' two tiers as felix would, with the prefixes of the rule
// IDs: ingress policy of the server's host endpoint, NFLOG group 1.
func serverRules(r rules) string {
	log := func(p string) string { return fmt.Sprintf("log prefix %q snaplen 80 group 1", p) }
	return fmt.Sprintf(`table inet flowtest {
	chain input {
		type filter hook input priority filter; policy accept;
		ct state established,related accept
		meta l4proto { tcp, udp } th dport { 5353, 8080 } %s jump tier-default
		%s drop
	}
	chain tier-default {
		tcp dport 8080 %s accept
		%s drop
	}
}
`, log(r.pass.Prefix()), log(r.eotPlatform.Prefix()), log(r.allow.Prefix()), log(r.eotDefault.Prefix()))
}

// End to end on the kernel: real nftables rules carrying the prefixes, real packets from a
// client namespace, the collector reading NFLOG and conntrack in the server's namespace.
// An allowed TCP connection, denied UDP datagrams and denied pings come out as three flows
// with the right policies, rules, actions and counters.
func TestKernelEndToEnd(t *testing.T) {
	netnstest.Require(t, "nft", "ping")
	cli, srv := netnstest.New(t, "cli"), netnstest.New(t, "srv")
	netnstest.Link(t, cli, srv, "eth0", []string{"10.65.0.1/24"}, []string{"10.65.0.2/24"})
	r := newRules(t)
	if out, err := srv.Try("sh", "-c", "nft -f - <<'EOF'\n"+serverRules(r)+"EOF\n"); err != nil {
		t.Fatalf("nft: %v\n%s", err, out)
	}
	var err error
	srv.Do(t, func() { err = conntrack.EnableAccounting() })
	if err != nil {
		t.Fatal(err)
	}

	c := newCollector(r)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, ready := make(chan []flowlog.Flow, 100), make(chan struct{})
	done := make(chan error, 1)
	var counts Counts // written on the collector's goroutine, read after it returned
	var dumps int
	var dumpRead time.Duration
	go func() {
		done <- c.Run(ctx, Loop{NetNS: srv.FD, Poll: 50 * time.Millisecond, Flush: 100 * time.Millisecond,
			NFLOGFlush: 10 * time.Millisecond, Out: func(f []flowlog.Flow) { counts = c.Counts(); out <- f }, Ready: func() { close(ready) },
			Dumped: func(read, _ time.Duration) { dumps, dumpRead = dumps+1, dumpRead+read }})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}

	tcpPort, payload := tcpExchange(t, cli, srv)
	udpPort := sendUDP(t, cli, 3, 100)
	cli.Exec(t, "sh", "-c", "ping -c2 -i0.2 -W1 10.65.0.2 || true")
	waitFinished(t, srv, tcpPort)

	// Flows come every 100 ms; add up the intervals until every connection is accounted for.
	byProto := collect(t, out, func(m map[string]flowlog.Flow) bool {
		return m["tcp"].NumConnectionsCompleted == 1 && m["udp"].PacketsIn == 3 && m["icmp"].PacketsIn == 2
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(byProto) != 3 {
		t.Fatalf("got flows of %d protocols: %+v", len(byProto), byProto)
	}
	ignoreTimes := cmpopts.IgnoreFields(flowlog.Flow{}, "StartTime", "EndTime", "PacketsIn", "BytesIn", "PacketsOut", "BytesOut")
	for _, f := range byProto {
		t.Logf("%s flow: %s", f.Proto, jsonLine(f))
	}
	tcp := byProto["tcp"]
	if d := cmp.Diff(flowlog.Flow{
		Key: key("tcp", 8080, flowlog.Allow, []flowlog.PolicyHit{
			hit(flowlog.KindGlobalNetworkPolicy, "platform", "platform-pass", flowlog.Pass, 0, 0, ""),
			hit(flowlog.KindGlobalNetworkPolicy, "default", "allow-web", flowlog.Allow, 1, 1, ""),
		}),
		SourceLabels: []string{}, DestLabels: []string{"role=db"},
		NumConnectionsStarted: 1, NumConnectionsCompleted: 1, NumConnectionsLive: 1,
	}, tcp, ignoreTimes); d != "" {
		t.Errorf("TCP flow (-want +got):\n%s", d)
	}
	if tcp.BytesIn < int64(payload)+3*40 || tcp.BytesOut < int64(payload/2)+2*40 || tcp.PacketsIn < 4 || tcp.PacketsOut < 3 {
		t.Errorf("TCP counters in %d/%d out %d/%d (payload %d)", tcp.PacketsIn, tcp.BytesIn, tcp.PacketsOut, tcp.BytesOut, payload)
	}
	udp := byProto["udp"]
	if d := cmp.Diff(flowlog.Flow{
		Key: key("udp", 5353, flowlog.Deny, []flowlog.PolicyHit{
			hit(flowlog.KindGlobalNetworkPolicy, "platform", "platform-pass", flowlog.Pass, 0, 0, ""),
			hit(flowlog.KindEndOfTier, "default", "", flowlog.Deny, 1, -1, "allow-web"),
		}),
		SourceLabels: []string{}, DestLabels: []string{"role=db"},
		PacketsIn: 3, BytesIn: 3 * (20 + 8 + 100), NumConnectionsStarted: 1, NumConnectionsLive: 1,
	}, udp, cmpopts.IgnoreFields(flowlog.Flow{}, "StartTime", "EndTime")); d != "" {
		t.Errorf("UDP flow from port %d (-want +got):\n%s", udpPort, d)
	}
	icmp := byProto["icmp"]
	if d := cmp.Diff(flowlog.Flow{
		Key: key("icmp", 8<<8, flowlog.Deny, []flowlog.PolicyHit{
			hit(flowlog.KindEndOfTier, "platform", "", flowlog.Deny, 0, -1, "platform-pass"),
		}),
		SourceLabels: []string{}, DestLabels: []string{"role=db"},
		PacketsIn: 2, BytesIn: 2 * 84, NumConnectionsStarted: 1, NumConnectionsLive: 1,
	}, icmp, cmpopts.IgnoreFields(flowlog.Flow{}, "StartTime", "EndTime")); d != "" {
		t.Errorf("ICMP flow (-want +got):\n%s", d)
	}
	if st := c.Stats(); st != (Stats{}) {
		t.Errorf("stats %+v", st)
	}
	if counts.NFLOG.Packets < 4 || counts.NFLOG.ParseErrors != 0 || counts.NFLOG.Overruns != 0 || counts.FlowsLost != 0 {
		t.Errorf("counts %+v", counts)
	}
	if dumps == 0 || dumpRead <= 0 {
		t.Errorf("%d conntrack dumps timed, reading took %s in all", dumps, dumpRead)
	} else {
		t.Logf("%d conntrack dumps, %s each on average to read", dumps, dumpRead/time.Duration(dumps))
	}
}

// collect adds up the flows of successive intervals by protocol (counters and connection
// counts summed, the rest from the latest) until enough says so or 20 s have passed.
func collect(t *testing.T, out <-chan []flowlog.Flow, enough func(map[string]flowlog.Flow) bool) map[string]flowlog.Flow {
	t.Helper()
	m := map[string]flowlog.Flow{}
	deadline := time.After(20 * time.Second)
	for !enough(m) {
		select {
		case flows := <-out:
			for _, f := range flows {
				sum := m[f.Proto]
				f.PacketsIn, f.BytesIn = f.PacketsIn+sum.PacketsIn, f.BytesIn+sum.BytesIn
				f.PacketsOut, f.BytesOut = f.PacketsOut+sum.PacketsOut, f.BytesOut+sum.BytesOut
				f.NumConnectionsStarted += sum.NumConnectionsStarted
				f.NumConnectionsCompleted += sum.NumConnectionsCompleted
				m[f.Proto] = f
			}
		case <-deadline:
			t.Logf("flows so far: %+v", m)
			return m
		}
	}
	return m
}

func jsonLine(f flowlog.Flow) string {
	b, _ := json.Marshal(f)
	return string(b)
}

func key(proto string, port uint16, a flowlog.Action, enforced []flowlog.PolicyHit) flowlog.Key {
	return flowlog.Key{
		SourceName: "pvt", SourceNamespace: "-", SourceType: flowlog.Network,
		DestName: "server-host", DestNamespace: "-", DestType: flowlog.HostEndpoint,
		DestPort: port, Proto: proto, Reporter: flowlog.Dst, Action: a,
		Policies: flowlog.Trace{Enforced: enforced, Pending: []flowlog.PolicyHit{}},
	}
}

// tcpExchange opens a connection to the server's port 8080, sends 2000 bytes, reads 1000
// back and closes; it returns the client's port and the payload size.
func tcpExchange(t *testing.T, cli, srv *netnstest.NS) (uint16, int) {
	t.Helper()
	const payload = 2000
	var l net.Listener
	var err error
	srv.Do(t, func() { l, err = net.Listen("tcp4", "10.65.0.2:8080") })
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		c, err := l.Accept()
		if err != nil {
			return
		}
		buf := make([]byte, payload)
		_, _ = io.ReadFull(c, buf)
		_, _ = c.Write(buf[:payload/2])
		_, _ = io.Copy(io.Discard, c)
		c.Close()
	}()
	var c net.Conn
	cli.Do(t, func() { c, err = net.Dial("tcp4", "10.65.0.2:8080") })
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write(make([]byte, payload))
	_, _ = io.ReadFull(c, make([]byte, payload/2))
	port := uint16(c.LocalAddr().(*net.TCPAddr).Port)
	c.Close()
	<-served
	l.Close()
	return port, payload
}

func sendUDP(t *testing.T, cli *netnstest.NS, n, size int) uint16 {
	t.Helper()
	var c net.Conn
	var err error
	cli.Do(t, func() { c, err = net.Dial("udp4", "10.65.0.2:5353") })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range n {
		_, _ = c.Write(make([]byte, size))
	}
	return uint16(c.LocalAddr().(*net.UDPAddr).Port)
}

// waitFinished waits until conntrack has the TCP connection in TIME_WAIT or later.
func waitFinished(t *testing.T, srv *netnstest.NS, port uint16) {
	t.Helper()
	r, err := conntrack.Open(srv.FD)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		entries, _ := r.Dump()
		for _, e := range entries {
			if e.Orig.SrcPort == port && e.Orig.Src == netip.MustParseAddr("10.65.0.1") && e.Finished() {
				return
			}
		}
	}
	t.Fatal("the TCP connection never finished")
}
