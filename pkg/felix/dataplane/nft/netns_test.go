package nft

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// Kernel tests run only as root, each in network namespaces it creates
// (never the host's own). They use `ip` and `nft` to set up and to inspect.

// Nothing a test of this package creates may program the test process's own namespace.
func init() { RefuseOwnNamespace() }

// testNetNS is a named network namespace made with `ip netns add`.
type testNetNS struct {
	name string
	fd   int
}

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	for _, bin := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("needs %s: %v", bin, err)
		}
	}
}

// newNetNS creates a fresh namespace and removes it when the test ends.
func newNetNS(t testing.TB) *testNetNS {
	t.Helper()
	requireRoot(t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "nfttest-" + hex.EncodeToString(b)
	run(t, "ip", "netns", "add", name)
	f, err := os.Open("/run/netns/" + name)
	if err != nil {
		t.Fatalf("opening netns: %v", err)
	}
	ns := &testNetNS{name: name, fd: int(f.Fd())}
	t.Cleanup(func() {
		_ = f.Close()
		_ = exec.Command("ip", "netns", "del", name).Run()
	})
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return ns
}

// exec runs a command inside the namespace.
func (ns *testNetNS) exec(t testing.TB, args ...string) string {
	t.Helper()
	return run(t, append([]string{"ip", "netns", "exec", ns.name}, args...)...)
}

func run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// applier returns an Applier programming the namespace through netlink.
func (ns *testNetNS) applier(t testing.TB) (*Applier, *Netlink) {
	return ns.applierWith(t, NetlinkConfig{})
}

func (ns *testNetNS) applierWith(t testing.TB, cfg NetlinkConfig) (*Applier, *Netlink) {
	cfg.NetNS = ns.fd
	k := NewNetlink(cfg)
	t.Cleanup(func() { k.Close() })
	return NewApplier(k, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)), k
}

// sendModes are the two ways the netlink Kernel can send a batch.
var sendModes = []struct {
	name string
	cfg  NetlinkConfig
}{{"lean", NetlinkConfig{}}, {"per-message-acks", NetlinkConfig{PerMessageAcks: true}}}

func (ns *testNetNS) apply(t testing.TB, a *Applier, rs *Ruleset) Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := a.Apply(ctx, rs)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return st
}

// nftTable is our table as `nft -s list table inet calico` prints it,
// parsed into chains (rule lines) and sets/maps (type and elements).
type nftTable struct {
	chains map[string]*nftChain
	sets   map[string]*nftSet
}

type nftChain struct {
	header string
	rules  []string
}

type nftSet struct {
	header   []string
	elements []string
}

// listTable lists the table inside the namespace; nil when it is absent.
func (ns *testNetNS) listTable(t testing.TB) *nftTable {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns.name, "nft", "-s", "list", "table", "inet", "calico").CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "No such file") {
			return nil
		}
		t.Fatalf("nft list: %v\n%s", err, out)
	}
	return parseNFTList(string(out))
}

var blockRE = regexp.MustCompile(`^\t(chain|set|map) (\S+) \{$`)

func parseNFTList(text string) *nftTable {
	tab := &nftTable{chains: map[string]*nftChain{}, sets: map[string]*nftSet{}}
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		m := blockRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		var body []string
		for i++; i < len(lines) && lines[i] != "\t}"; i++ {
			body = append(body, strings.TrimSpace(lines[i]))
		}
		if m[1] == "chain" {
			tab.chains[m[2]] = parseChainBody(body)
		} else {
			tab.sets[m[2]] = parseSetBody(body)
		}
	}
	return tab
}

func parseChainBody(body []string) *nftChain {
	c := &nftChain{}
	for _, l := range body {
		switch {
		case strings.HasPrefix(l, "type "):
			c.header = l
		case l != "":
			c.rules = append(c.rules, l)
		}
	}
	return c
}

func parseSetBody(body []string) *nftSet {
	s := &nftSet{}
	joined := ""
	for _, l := range body {
		switch {
		case strings.HasPrefix(l, "elements = {") || joined != "":
			joined += " " + l
		case l != "":
			s.header = append(s.header, l)
		}
	}
	joined = strings.TrimSpace(joined)
	joined = strings.TrimSuffix(strings.TrimPrefix(joined, "elements = {"), "}")
	for _, e := range strings.Split(joined, ",") {
		if e = strings.TrimSpace(e); e != "" {
			s.elements = append(s.elements, e)
		}
	}
	return s
}

// nftJSONRules returns, per chain, the handles of its rules from
// `nft -j list table inet calico`.
func (ns *testNetNS) ruleHandles(t testing.TB) map[string][]int {
	t.Helper()
	out := ns.exec(t, "nft", "-j", "list", "table", "inet", "calico")
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("parsing nft -j: %v", err)
	}
	handles := map[string][]int{}
	for _, obj := range doc.Nftables {
		raw, ok := obj["rule"]
		if !ok {
			continue
		}
		var r struct {
			Chain  string `json:"chain"`
			Handle int    `json:"handle"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("parsing rule: %v", err)
		}
		handles[r.Chain] = append(handles[r.Chain], r.Handle)
	}
	return handles
}
