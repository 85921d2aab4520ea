package confd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/birdctl"
	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/netnstest"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// The real-BGP tests build hosts as network namespaces whose eth0 sits on one bridge in a
// separate "fabric" namespace; nothing touches the test machine's own network. Host addresses
// are in 198.18.0.0/15 (IPv4) and fd5c:ff::/64 (IPv6, inside the test range fd5c::/16); pools
// are 10.65.0.0/16 and fd5c:1::/48.

// bgpRig is what every real-BGP test starts from: an embedded etcd, a datastore client for
// the daemons, a store that writes objects into it and hosts on one bridge.
type bgpRig struct {
	t     *testing.T
	st    store
	ds    *datastore.Client
	hosts []*testHost
}

// newBGPRig skips unless root (with BIRD installed and not -short) and builds n hosts.
func newBGPRig(t *testing.T, n int) *bgpRig {
	t.Helper()
	netnstest.RequireLong(t, "bird")
	srv := etcdtest.Start(t)
	ds, err := datastore.New(srv.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	return &bgpRig{t: t, st: store{t: t, cli: srv.Client()}, ds: ds, hosts: makeFabric(t, n)}
}

// nodes writes every host's Node, with no labels and no route reflector cluster.
func (r *bgpRig) nodes() {
	for _, h := range r.hosts {
		r.st.put(hostNode(h, nil, ""))
	}
}

// ownBlocks gives host-N the affinity of the block each function returns for N (block4,
// block6).
func (r *bgpRig) ownBlocks(blocks ...func(int) string) {
	for i, h := range r.hosts {
		for _, block := range blocks {
			r.st.affinity(h.name, block(i+1))
		}
	}
}

// start runs calico-confd on every host, each on its own copy of the templates (so that a test
// can break one host's), then BIRD on every host once its first configuration is rendered. It
// returns when the first BIRD was started.
func (r *bgpRig) start() time.Time {
	r.t.Helper()
	for _, h := range r.hosts {
		tdir := filepath.Join(h.dir, "templates")
		netnstest.Run(r.t, "cp", "-r", templatesDir, tdir)
		startConfd(r.t, h, r.ds, tdir)
	}
	started := time.Now()
	for _, h := range r.hosts {
		startBIRD(r.t, h)
	}
	return started
}

// pool4 is the IPv4 pool every test uses, 10.65.0.0/16.
func pool4() *api.IPPool {
	return &api.IPPool{ObjectMeta: api.ObjectMeta{Name: "v4"}, Spec: api.IPPoolSpec{CIDR: "10.65.0.0/16"}}
}

// pool6 is the IPv6 pool, fd5c:1::/48 in blocks of /122.
func pool6() *api.IPPool {
	return &api.IPPool{ObjectMeta: api.ObjectMeta{Name: "v6"}, Spec: api.IPPoolSpec{CIDR: "fd5c:1::/48", BlockSize: 122}}
}

// testHost is one host: a network namespace, its confd and its BIRD.
type testHost struct {
	name   string // Node name
	ns     string
	v4, v6 string // addresses without prefix length
	dir    string // confd output and BIRD socket
	cfg    *Config
	bird   *exec.Cmd
}

func (h *testHost) socket() string { return filepath.Join(h.dir, "bird.ctl") }

// makeFabric creates n host namespaces on a bridge; all are removed when the test ends.
func makeFabric(t *testing.T, n int) []*testHost {
	t.Helper()
	fabric := netnstest.New(t, "confd-fab").Name
	netnstest.Run(t, "ip", "-n", fabric, "link", "add", "br0", "type", "bridge")
	netnstest.Run(t, "ip", "-n", fabric, "link", "set", "br0", "up")
	var hosts []*testHost
	for i := 1; i <= n; i++ {
		h := &testHost{name: fmt.Sprintf("host-%d", i), ns: netnstest.New(t, fmt.Sprintf("confd-h%d", i)).Name,
			v4: fmt.Sprintf("198.18.10.%d", i), v6: fmt.Sprintf("fd5c:ff::%d", i), dir: t.TempDir()}
		port := fmt.Sprintf("h%d", i)
		netnstest.Run(t, "ip", "-n", h.ns, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", fabric)
		netnstest.Run(t, "ip", "-n", fabric, "link", "set", port, "master", "br0", "up")
		netnstest.Run(t, "ip", "-n", h.ns, "addr", "add", h.v4+"/24", "dev", "eth0")
		netnstest.Run(t, "ip", "-n", h.ns, "-6", "addr", "add", h.v6+"/64", "dev", "eth0", "nodad")
		netnstest.Run(t, "ip", "-n", h.ns, "link", "set", "eth0", "up")
		hosts = append(hosts, h)
	}
	return hosts
}

// startConfd runs the daemon of h in-process until the test ends, with short BGP timers.
func startConfd(t *testing.T, h *testHost, ds *datastore.Client, templates string) {
	t.Helper()
	secrets := filepath.Join(h.dir, "secrets")
	os.MkdirAll(filepath.Join(secrets, "bgp"), 0o700)
	if err := os.WriteFile(filepath.Join(secrets, "bgp", "mesh"), []byte("mesh-pa55word\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.cfg = &Config{TemplatesDir: templates, OutputDir: h.dir, BIRDSocket: h.socket(), Templates: DefaultTemplates(), SecretsDir: secrets,
		Vars: map[string]string{"connect_delay_time": "1", "connect_retry_time": "1", "error_wait_time": "1,2",
			"hold_time": "3", "keepalive_time": "1"}}
	h.cfg.setDefaults()
	h.cfg.Debounce.Duration = 100 * time.Millisecond
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel).With().Str("host", h.name).Logger()
	src := syncer.New(ds, SyncerConfig(h.name), log)
	runDaemon(t, NewDaemon(h.cfg, h.name, src, ExecRunner, daemon.NewNotifier(log), log))
}

// startBIRD runs BIRD in h's namespace on the rendered configuration; it is killed when the
// test ends.
func startBIRD(t *testing.T, h *testHost) {
	t.Helper()
	waitUntil(t, 20*time.Second, h.name+" first render", func() error {
		_, err := os.Stat(filepath.Join(h.dir, "bird.cfg"))
		return err
	})
	logf, err := os.Create(filepath.Join(h.dir, "bird.log"))
	if err != nil {
		t.Fatal(err)
	}
	h.bird = exec.Command("ip", "netns", "exec", h.ns, "bird", "-f", "-c", filepath.Join(h.dir, "bird.cfg"),
		"-s", h.socket(), "-P", filepath.Join(h.dir, "bird.pid"))
	h.bird.Stdout, h.bird.Stderr = logf, logf
	if err := h.bird.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.bird.Process.Kill()
		h.bird.Wait()
		logf.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logf.Name())
			t.Logf("BIRD log of %s (last 3000 bytes):\n%s", h.name, tail(string(data), 3000))
		}
	})
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// sessions returns the BGP protocols of h's BIRD: name -> BGP state.
func (h *testHost) sessions() (map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := birdctl.Dial(ctx, h.socket())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	protos, err := c.Protocols(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range protos {
		if p.Proto == "BGP" {
			out[p.Name] = p.BGPState
		}
	}
	return out, nil
}

// birdCommand runs a command on h's BIRD and returns the reply text.
func (h *testHost) birdCommand(t *testing.T, cmd string) string {
	t.Helper()
	out, err := h.tryBirdCommand(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryBirdCommand is birdCommand returning BIRD's refusal (such as "Network not found" before
// a route is learnt) as an error, for polling.
func (h *testHost) tryBirdCommand(cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := birdctl.Dial(ctx, h.socket())
	if err != nil {
		return "", err
	}
	defer c.Close()
	lines, err := c.Command(ctx, cmd)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.Text + "\n")
	}
	return b.String(), nil
}

// birdRoutes returns h's kernel routes installed by BIRD in one family: destination -> "via
// <gateway>" or the route type ("blackhole").
func (h *testHost) birdRoutes(t *testing.T, family string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(netnstest.Run(t, "ip", "-n", h.ns, family, "route", "show", "proto", "bird"), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "blackhole" || f[0] == "unreachable":
			out[f[1]] = f[0]
		case len(f) >= 3 && f[1] == "via":
			out[f[0]] = "via " + f[2]
		default:
			out[f[0]] = strings.Join(f[1:], " ")
		}
	}
	return out
}

// waitUntil polls check until it returns nil.
func waitUntil(t *testing.T, timeout time.Duration, what string, check func() error) time.Duration {
	t.Helper()
	start := time.Now()
	var err error
	for time.Since(start) < timeout {
		if err = check(); err == nil {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s: %v", what, timeout, err)
	return 0
}

// wantSessions checks that h has exactly these BGP protocols, all Established.
func wantSessions(h *testHost, names ...string) func() error {
	return func() error {
		got, err := h.sessions()
		if err != nil {
			return err
		}
		var have []string
		for n, st := range got {
			have = append(have, n+"="+st)
		}
		sort.Strings(have)
		var want []string
		for _, n := range names {
			want = append(want, n+"=Established")
		}
		sort.Strings(want)
		if strings.Join(have, " ") != strings.Join(want, " ") {
			return fmt.Errorf("%s sessions %v, want %v", h.name, have, want)
		}
		return nil
	}
}

// wantRoutes checks that h's BIRD routes in a family include want and none of absent.
func wantRoutes(t *testing.T, h *testHost, family string, want map[string]string, absent ...string) func() error {
	return func() error {
		got := h.birdRoutes(t, family)
		for dst, v := range want {
			if got[dst] != v {
				return fmt.Errorf("%s: route %s is %q, want %q (all: %v)", h.name, dst, got[dst], v, got)
			}
		}
		for _, dst := range absent {
			if _, ok := got[dst]; ok {
				return fmt.Errorf("%s: route %s still present (%s)", h.name, dst, got[dst])
			}
		}
		return nil
	}
}

// store writes objects straight into etcd (last writer wins; these tests have one writer).
type store struct {
	t   *testing.T
	cli *clientv3.Client
}

func (s store) put(objs ...api.Resource) {
	s.t.Helper()
	for _, o := range objs {
		api.SetDefaults(o)
		if err := datastore.Validate(o); err != nil {
			s.t.Fatalf("invalid test object: %v", err)
		}
		key, err := datastore.KeyOf(o)
		if err != nil {
			s.t.Fatal(err)
		}
		data, err := datastore.EncodeResource(o)
		if err != nil {
			s.t.Fatal(err)
		}
		s.putRaw(key, string(data))
	}
}

func (s store) putRaw(key, value string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.cli.Put(ctx, key, value); err != nil {
		s.t.Fatal(err)
	}
}

func (s store) affinity(host, cidr string) {
	v, _ := json.Marshal(api.BlockAffinity{State: api.AffinityConfirmed})
	s.putRaw(datastore.AffinityKey(host, cidr), string(v))
}

func (s store) del(kind, name string) {
	s.t.Helper()
	k, ok := api.LookupKind(kind)
	if !ok {
		s.t.Fatalf("unknown kind %s", kind)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.cli.Delete(ctx, datastore.ResourceKey(k, "", name)); err != nil {
		s.t.Fatal(err)
	}
}

// pname is the BIRD protocol name of a peering (see peerName).
func pname(typ, ip string, port uint16) string {
	s, err := peerName(typ, netip.MustParseAddr(ip), port)
	if err != nil {
		panic(err)
	}
	return s.Name()
}
