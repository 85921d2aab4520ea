package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/goldmane"
	pb "github.com/calico-host/calico-host/pkg/flowlog/goldmane/goldmanepb"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

const flowWebIngress = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: web-ingress}
spec:
  selector: role == 'web'
  types: [Ingress]
  ingress:
  - {action: Deny, protocol: TCP, source: {selector: role == 'other'}, destination: {ports: [80]}}
  - {action: Allow, protocol: TCP, source: {selector: role == 'client'}, destination: {ports: [80]}}
  - {action: Allow, protocol: UDP, source: {selector: role == 'client'}, destination: {ports: [80]}}
  - {action: Allow, protocol: ICMP, source: {selector: role == 'client'}}
  - {action: Allow, protocol: ICMPv6, source: {selector: role == 'client'}}
`

const flowClientEgress = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: client-egress}
spec:
  selector: role == 'client'
  types: [Egress]
  egress:
  - {action: Deny, protocol: TCP, destination: {selector: role == 'other', ports: [80]}}
  - {action: Allow}
`

// icmpEcho and icmp6Echo are an echo request's dest_port in a flow (type << 8 | code, as
// Project Calico's collector puts it).
const (
	icmpEcho  = 8 << 8
	icmp6Echo = 128 << 8
)

// flowFlush is the tests' FlowLogsFlushInterval.
const flowFlush = 2 * time.Second

// TestFlowLogs: with flow logs on (the file and a Goldmane server), allowed and denied TCP, UDP
// and ICMP connections between two dual-stack hosts (IPv4 and IPv6 flows of one key aggregate;
// ICMPv6 has flows of its own) appear in each host's flow log file with the policy,
// rule index and action that decided them, for the destination's reporter (ingress policy,
// explicit deny and end of tier) and the source's (egress policy); a fake Goldmane server
// (in-process, on the fabric) receives the same flows over gRPC with mutual TLS (felix presents
// TyphaCertFile and checks the server against TyphaCAFile, as Project Calico's felix does), and
// felix's metrics count the deciding rules' packets.
func TestFlowLogs(t *testing.T) {
	requireBinaries(t)
	gm := &fakeGoldmane{}
	s := newSystemWith(t, topo.Options{Hosts: 2, Mode: topo.ModeBGP, IPv6: true}, topo.StartOptions{Felix: true}, func(f *topo.Fabric) error {
		pki, err := newGoldmanePKI(f.Dir, net.ParseIP(goldmaneIP))
		if err != nil {
			return err
		}
		addr, err := gm.serve(t, f.NS, pki)
		if err != nil {
			return err
		}
		for _, h := range f.Hosts {
			h.FelixEnv = append(h.FelixEnv, pki.felixEnv()...)
			h.FelixEnv = append(h.FelixEnv, "FELIX_FLOWLOGSFILEENABLED=true", "FELIX_FLOWLOGSFILEDIRECTORY="+filepath.Join(h.Dir, "flowlogs"),
				fmt.Sprintf("FELIX_FLOWLOGSFLUSHINTERVAL=%d", int(flowFlush.Seconds())), "FELIX_FLOWLOGSGOLDMANESERVER="+addr,
				"FELIX_PROMETHEUSMETRICSENABLED=true", "FELIX_PROMETHEUSMETRICSHOST=127.0.0.1")
		}
		return nil
	})
	web := s.workload(s.Host(1), "web", map[string]string{"role": "web"}, 80)
	client := s.workload(s.Host(2), "client", map[string]string{"role": "client"}, 80)
	other := s.workload(s.Host(2), "other", map[string]string{"role": "other"}, 80)
	s.apply(flowWebIngress)
	s.apply(flowClientEgress)
	// Both hosts enforce the policies (each denies something of its own) before the connections
	// the test looks for.
	s.expect(30*time.Second, tcp(other, web, 80, false), tcp(client, other, 80, false))
	s.expect(30*time.Second, tcp(client, web, 80, true), udp(client, web, 80, true), icmp(client, web, true),
		tcp(other, web, 80, false), udp(other, web, 80, false), icmp(other, web, false),
		v6(tcp(client, web, 80, true), web), v6(udp(client, web, 80, true), web), v6(icmp(client, web, true), web),
		v6(tcp(other, web, 80, false), web), v6(icmp(other, web, false), web))

	gnp := func(rule int64, action flowlog.Action) string {
		return fmt.Sprintf("GlobalNetworkPolicy default/web-ingress rule %d %v", rule, action)
	}
	endOfTier := "EndOfTier default rule -1 Deny trigger web-ingress"
	egress := "GlobalNetworkPolicy default/client-egress rule 1 Allow"
	want := map[string]string{ // reporter src dst proto port -> action and the decisive hit
		flowID(flowlog.Dst, client, web, "tcp", 80):          "Allow " + gnp(1, flowlog.Allow),
		flowID(flowlog.Dst, client, web, "udp", 80):          "Allow " + gnp(2, flowlog.Allow),
		flowID(flowlog.Dst, client, web, "icmp", icmpEcho):   "Allow " + gnp(3, flowlog.Allow),
		flowID(flowlog.Dst, other, web, "tcp", 80):           "Deny " + gnp(0, flowlog.Deny),
		flowID(flowlog.Dst, other, web, "udp", 80):           "Deny " + endOfTier,
		flowID(flowlog.Dst, other, web, "icmp", icmpEcho):    "Deny " + endOfTier,
		flowID(flowlog.Src, client, web, "tcp", 80):          "Allow " + egress,
		flowID(flowlog.Src, client, web, "udp", 80):          "Allow " + egress,
		flowID(flowlog.Src, client, web, "icmp", icmpEcho):   "Allow " + egress,
		flowID(flowlog.Dst, client, web, "icmp6", icmp6Echo): "Allow " + gnp(4, flowlog.Allow),
		flowID(flowlog.Dst, other, web, "icmp6", icmp6Echo):  "Deny " + endOfTier,
		flowID(flowlog.Src, client, web, "icmp6", icmp6Echo): "Allow " + egress,
	}
	var files []flowlog.Flow
	start := time.Now()
	s.eventually(10*flowFlush+20*time.Second, "flows in the files", func() error {
		files = append(readFlows(t, s.Host(1).Dir), readFlows(t, s.Host(2).Dir)...)
		return matchFlows(files, want)
	})
	t.Logf("all %d flows in the files %s after the probes (flush interval %s)", len(want), time.Since(start).Round(time.Millisecond), flowFlush)
	s.eventually(30*time.Second, "the same flows at Goldmane", func() error { return gm.hasAll(files) })
	s.eventually(10*flowFlush+20*time.Second, "conntrack's counters of the allowed TCP connections", func() error {
		var packets, bytes, started int64
		for _, f := range append(readFlows(t, s.Host(1).Dir), readFlows(t, s.Host(2).Dir)...) {
			if f.Reporter == flowlog.Dst && f.SourceName == client.ContainerID && f.Proto == "tcp" {
				packets, bytes, started = packets+f.PacketsIn, bytes+f.BytesIn, started+f.NumConnectionsStarted
			}
		}
		if packets == 0 || bytes == 0 || started == 0 {
			return fmt.Errorf("packets in %d, bytes in %d, connections started %d", packets, bytes, started)
		}
		return nil
	})
	checkPolicyMetrics(t, s)
}

// checkPolicyMetrics: host 1's felix exports the counters of the rules that decided, by
// policy and rule.
func checkPolicyMetrics(t *testing.T, s *system) {
	for _, want := range []string{
		`calico_host_felix_policy_packets_total{action="Allow",direction="Ingress",kind="GlobalNetworkPolicy",namespace="",policy="web-ingress",rule="1",tier="default"}`,
		`calico_host_felix_policy_packets_total{action="Deny",direction="Ingress",kind="GlobalNetworkPolicy",namespace="",policy="web-ingress",rule="0",tier="default"}`,
		`calico_host_felix_policy_bytes_total{action="Deny",direction="Ingress",kind="EndOfTier",namespace="",policy="",rule="-1",tier="default"}`,
	} {
		s.eventually(20*time.Second, "metric "+want, func() error {
			code, body, err := s.Host(1).NS.HTTPGet(s.ctx, "127.0.0.1:9091", "/metrics")
			if err != nil || code != 200 {
				return fmt.Errorf("GET /metrics: %d %v", code, err)
			}
			for _, line := range strings.Split(body, "\n") {
				if v, ok := strings.CutPrefix(line, want+" "); ok && v != "0" {
					return nil
				}
			}
			return fmt.Errorf("no non-zero %s", want)
		})
	}
}

// flowID names a flow by what the test knows of it.
func flowID(r flowlog.Reporter, src, dst *topo.Workload, proto string, port int) string {
	return fmt.Sprintf("%v %s>%s %s/%d", r, src.ContainerID, dst.ContainerID, proto, port)
}

// describe is a flow's action and its last enforced hit (the one that decided).
func describe(f flowlog.Flow) string {
	hits := f.Policies.Enforced
	if len(hits) == 0 {
		return f.Action.String() + " (no policy)"
	}
	h := hits[len(hits)-1]
	out := fmt.Sprintf("%v %v %s/%s rule %d %v", f.Action, h.Kind, h.Tier, h.Name, h.RuleIndex, h.Action)
	if h.Kind == flowlog.KindEndOfTier {
		out = fmt.Sprintf("%v %v %s rule %d %v", f.Action, h.Kind, h.Tier, h.RuleIndex, h.Action)
	}
	if h.Trigger != nil {
		out += " trigger " + h.Trigger.Name
	}
	return out
}

// matchFlows checks that every wanted flow is there with its action and decisive hit (among
// the flows of its key: the probes of an earlier step may have made others).
func matchFlows(flows []flowlog.Flow, want map[string]string) error {
	got, seen := map[string][]string{}, map[string]bool{}
	for _, f := range flows {
		id := fmt.Sprintf("%v %s>%s %s/%d", f.Reporter, f.SourceName, f.DestName, f.Proto, f.DestPort)
		got[id] = append(got[id], describe(f))
		seen[id+" "+describe(f)] = true
	}
	var missing []string
	for id, w := range want {
		if !seen[id+" "+w] {
			missing = append(missing, fmt.Sprintf("%s: got %q, want %q", id, got[id], w))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("%d flows not as wanted:\n%s\n(have %v)", len(missing), strings.Join(missing, "\n"), got)
	}
	return nil
}

// readFlows reads a host's flow log file (JSON lines).
func readFlows(t *testing.T, hostDir string) []flowlog.Flow {
	f, err := os.Open(filepath.Join(hostDir, "flowlogs", "flows.log"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []flowlog.Flow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var fl flowlog.Flow
		if err := json.Unmarshal(sc.Bytes(), &fl); err != nil {
			t.Errorf("flow log line %q: %v", sc.Text(), err)
			continue
		}
		out = append(out, fl)
	}
	return out
}

// fakeGoldmane is a FlowCollector server (Goldmane's gRPC API, package goldmanepb): it
// acknowledges and keeps every flow.
type fakeGoldmane struct {
	pb.UnimplementedFlowCollectorServer
	mu    sync.Mutex
	flows []*pb.Flow
}

// goldmaneIP is where the fake Goldmane listens: the fabric's address (the hosts reach it as
// they reach etcd).
const goldmaneIP = "198.18.0.254"

// serve listens with mutual TLS (the server's certificate names goldmaneIP, the client's must
// be signed by pki's CA).
func (g *fakeGoldmane) serve(t *testing.T, fabric *topo.Netns, pki *goldmanePKI) (string, error) {
	l, err := fabric.Listen(goldmaneIP + ":0")
	if err != nil {
		return "", err
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(pki.server)))
	pb.RegisterFlowCollectorServer(srv, g)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return l.Addr().String(), nil
}

func (g *fakeGoldmane) Connect(s grpc.BidiStreamingServer[pb.FlowUpdate, pb.FlowReceipt]) error {
	for {
		u, err := s.Recv()
		if err != nil {
			return err
		}
		g.mu.Lock()
		g.flows = append(g.flows, u.Flow)
		g.mu.Unlock()
		if err := s.Send(&pb.FlowReceipt{}); err != nil {
			return err
		}
	}
}

// hasAll checks that every flow of the files reached the server, key and counters.
func (g *fakeGoldmane) hasAll(flows []flowlog.Flow) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, f := range flows {
		want := goldmane.ToProto(f)
		found := false
		for _, got := range g.flows {
			found = found || proto.Equal(got, want)
		}
		if !found {
			return fmt.Errorf("Goldmane lacks %v (has %d flows)", want.Key, len(g.flows))
		}
	}
	return nil
}
