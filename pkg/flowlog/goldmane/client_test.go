package goldmane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"

	"github.com/calico-host/calico-host/internal/pkitest"
	"github.com/calico-host/calico-host/pkg/flowlog"
	pb "github.com/calico-host/calico-host/pkg/flowlog/goldmane/goldmanepb"
)

// fakeGoldmane is a FlowCollector server: it acknowledges every flow and hands it over.
type fakeGoldmane struct {
	pb.UnimplementedFlowCollectorServer
	got chan *pb.Flow
}

func (g *fakeGoldmane) Connect(s grpc.BidiStreamingServer[pb.FlowUpdate, pb.FlowReceipt]) error {
	for {
		u, err := s.Recv()
		if err != nil {
			return err
		}
		g.got <- u.Flow
		if err := s.Send(&pb.FlowReceipt{}); err != nil {
			return err
		}
	}
}

// serve starts a fake Goldmane with mutual TLS on addr ("127.0.0.1:0" for any port).
func serve(t *testing.T, pki *testPKI, addr string) (*grpc.Server, *fakeGoldmane, string) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(pki.serverTLS)))
	g := &fakeGoldmane{got: make(chan *pb.Flow, 100)}
	pb.RegisterFlowCollectorServer(srv, g)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return srv, g, l.Addr().String()
}

func testFlow(name string) flowlog.Flow {
	deny := flowlog.PolicyHit{Kind: flowlog.KindEndOfTier, Tier: "security", Action: flowlog.Deny, RuleIndex: -1,
		Trigger: &flowlog.PolicyHit{Kind: flowlog.KindCalicoNetworkPolicy, Namespace: "prod", Name: "db", Tier: "security"}}
	return flowlog.Flow{
		StartTime: time.Unix(1700000000, 0), EndTime: time.Unix(1700000300, 0),
		Key: flowlog.Key{
			SourceName: name, SourceNamespace: "prod", SourceType: flowlog.WorkloadEndpoint,
			DestName: "host-1", DestNamespace: flowlog.NoNamespace, DestType: flowlog.HostEndpoint,
			DestPort: 5432, Proto: "tcp", Reporter: flowlog.Dst, Action: flowlog.Deny,
			Policies: flowlog.Trace{Enforced: []flowlog.PolicyHit{deny},
				Pending: []flowlog.PolicyHit{{Kind: flowlog.KindStagedGlobalNetworkPolicy, Name: "open", Tier: "default", Action: flowlog.Allow, RuleIndex: 2}}},
		},
		SourceLabels: []string{"app=client"}, DestLabels: []string{},
		PacketsIn: 3, BytesIn: 180, NumConnectionsStarted: 1, NumConnectionsLive: 1,
	}
}

func wantProto(name string) *pb.Flow {
	return &pb.Flow{
		Key: &pb.FlowKey{
			SourceName: name, SourceNamespace: "prod", SourceType: pb.EndpointType_WorkloadEndpoint,
			DestName: "host-1", DestNamespace: "-", DestType: pb.EndpointType_HostEndpoint,
			DestPort: 5432, Proto: "tcp", Reporter: pb.Reporter_Dst, Action: pb.Action_Deny,
			Policies: &pb.PolicyTrace{
				EnforcedPolicies: []*pb.PolicyHit{{Kind: pb.PolicyKind_EndOfTier, Tier: "security", Action: pb.Action_Deny, RuleIndex: -1,
					Trigger: &pb.PolicyHit{Kind: pb.PolicyKind_CalicoNetworkPolicy, Namespace: "prod", Name: "db", Tier: "security"}}},
				PendingPolicies: []*pb.PolicyHit{{Kind: pb.PolicyKind_StagedGlobalNetworkPolicy, Name: "open", Tier: "default",
					Action: pb.Action_Allow, RuleIndex: 2}},
			},
		},
		StartTime: 1700000000, EndTime: 1700000300,
		SourceLabels: []string{"app=client"},
		PacketsIn:    3, BytesIn: 180, NumConnectionsStarted: 1, NumConnectionsLive: 1,
	}
}

func receive(t *testing.T, g *fakeGoldmane) *pb.Flow {
	t.Helper()
	select {
	case f := <-g.got:
		return f
	case <-time.After(20 * time.Second):
		t.Fatal("the server received no flow")
		return nil
	}
}

// Flows reach a Goldmane server over real gRPC with mutual TLS, the server's name checked
// against the host of the address, every field as Goldmane's proto numbers it.
func TestStreamsOverMutualTLS(t *testing.T) {
	pki := newPKI(t, "localhost")
	_, g, addr := serve(t, pki, "127.0.0.1:0")
	_, port, _ := net.SplitHostPort(addr)
	c := runClient(t, pki.config("localhost:"+port))
	c.Push(testFlow("a-*"), testFlow("b-*"))
	for _, name := range []string{"a-*", "b-*"} {
		if got := receive(t, g); !proto.Equal(got, wantProto(name)) {
			t.Errorf("received\n%v\nwant\n%v", got, wantProto(name))
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for sent, _ := c.Stats(); sent != 2 && time.Now().Before(deadline); sent, _ = c.Stats() {
		time.Sleep(10 * time.Millisecond)
	}
	if sent, dropped := c.Stats(); sent != 2 || dropped != 0 {
		t.Errorf("sent %d, dropped %d; want 2, 0", sent, dropped)
	}
	// The same bytes as a marshalled message decode to the same flow (field numbers line up).
	b, _ := proto.Marshal(wantProto("a-*"))
	var back pb.Flow
	if err := proto.Unmarshal(b, &back); err != nil || !proto.Equal(&back, wantProto("a-*")) {
		t.Errorf("round trip: %v", err)
	}
}

// A server whose certificate does not name the host gets nothing.
func TestRefusesWrongServerName(t *testing.T) {
	pki := newPKI(t, "goldmane.example")
	_, g, addr := serve(t, pki, "127.0.0.1:0")
	c, err := New(pki.config(addr))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	c.Push(testFlow("a-*"))
	c.Run(ctx)
	select {
	case f := <-g.got:
		t.Fatalf("flow sent to a server with the wrong name: %v", f)
	default:
	}
	// With the name set explicitly it goes through.
	named := pki.config(addr)
	named.ServerName = "goldmane.example"
	c2 := runClient(t, named)
	c2.Push(testFlow("a-*"))
	receive(t, g)
}

// After the server restarts, the client reconnects and sends the recent flows again
// before new ones, as Project Calico's client does.
func TestReplaysAfterReconnect(t *testing.T) {
	pki := newPKI(t, "localhost")
	srv, g, addr := serve(t, pki, "127.0.0.1:0")
	_, port, _ := net.SplitHostPort(addr)
	c := runClient(t, pki.config("localhost:"+port))
	c.Push(testFlow("first-*"))
	receive(t, g)
	srv.Stop()
	_, g2, _ := serve(t, pki, addr)
	c.Push(testFlow("second-*"))
	if got := receive(t, g2); got.Key.SourceName != "first-*" {
		t.Errorf("first flow after reconnecting: %v", got.Key.SourceName)
	}
	if got := receive(t, g2); got.Key.SourceName != "second-*" {
		t.Errorf("second flow after reconnecting: %v", got.Key.SourceName)
	}
}

func TestNewRefuses(t *testing.T) {
	pki := newPKI(t, "localhost")
	empty := filepath.Join(t.TempDir(), "empty.pem")
	_ = os.WriteFile(empty, []byte("not a certificate"), 0o600)
	for name, cfg := range map[string]Config{
		"no port":    {Server: "goldmane"},
		"no key":     {Server: "g:7443", CertFile: pki.certFile, CAFile: pki.caFile},
		"missing CA": {Server: "g:7443", CertFile: pki.certFile, KeyFile: pki.keyFile, CAFile: "/nonexistent"},
		"empty CA":   {Server: "g:7443", CertFile: pki.certFile, KeyFile: pki.keyFile, CAFile: empty},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// testPKI is a CA, a server certificate for one DNS name and a client certificate, with
// the files a client reads.
type testPKI struct {
	serverTLS                     *tls.Config
	certFile, keyFile, caFile     string
	serverCertFile, serverKeyFile string
}

// config is a client configuration for server with the PKI's client certificate and CA.
func (p *testPKI) config(server string) Config {
	return Config{Server: server, CertFile: p.certFile, KeyFile: p.keyFile, CAFile: p.caFile}
}

// runClient makes a client of cfg and runs it until the test ends.
func runClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go c.Run(ctx)
	return c
}

func newPKI(t *testing.T, serverName string) *testPKI {
	t.Helper()
	ca, err := pkitest.NewCA(t.TempDir(), "test CA")
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Issue("server", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, serverName)
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Issue("calico-felix", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	if err != nil {
		t.Fatal(err)
	}
	return &testPKI{
		serverTLS: &tls.Config{Certificates: []tls.Certificate{server.TLS}, ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert},
		certFile:  client.CertFile, keyFile: client.KeyFile, caFile: ca.File,
		serverCertFile: server.CertFile, serverKeyFile: server.KeyFile,
	}
}

// A full queue drops flows and counts them; Push never blocks.
func TestPushDropsWhenFull(t *testing.T) {
	c, err := New(Config{Server: "127.0.0.1:1", Queue: 2})
	if err != nil {
		t.Fatal(err)
	}
	c.Push(testFlow("a"), testFlow("b"), testFlow("c"))
	if sent, dropped := c.Stats(); sent != 0 || dropped != 1 {
		t.Errorf("sent %d, dropped %d; want 0, 1", sent, dropped)
	}
}

// The local reporter's kind of server: FlowCollector on a unix socket, no TLS.
func TestStreamsOverUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "flows.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	g := &fakeGoldmane{got: make(chan *pb.Flow, 10)}
	pb.RegisterFlowCollectorServer(srv, g)
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()
	c := runClient(t, Config{Server: "unix://" + sock})
	c.Push(testFlow("a-*"))
	if got := receive(t, g); !proto.Equal(got, wantProto("a-*")) {
		t.Errorf("received %v", got)
	}
}
