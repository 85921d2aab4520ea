package nstest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netns"
)

// NS is a named network namespace made with `ip netns add`, removed when
// the test ends.
type NS struct {
	Name string
	FD   int
}

// Require skips the test unless it runs as root with ip and nft.
func Require(t testing.TB) {
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

// New creates a fresh namespace with lo up.
func New(t testing.TB) *NS {
	t.Helper()
	Require(t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "nfttest-" + hex.EncodeToString(b)
	Run(t, "ip", "netns", "add", name)
	f, err := os.Open("/run/netns/" + name)
	if err != nil {
		t.Fatalf("opening netns: %v", err)
	}
	ns := &NS{Name: name, FD: int(f.Fd())}
	t.Cleanup(func() {
		_ = f.Close()
		_ = exec.Command("ip", "netns", "del", name).Run()
	})
	ns.Exec(t, "ip", "link", "set", "lo", "up")
	return ns
}

// Run runs a command and fails the test if it fails.
func Run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Exec runs a command inside the namespace.
func (ns *NS) Exec(t testing.TB, args ...string) string {
	t.Helper()
	return Run(t, append([]string{"ip", "netns", "exec", ns.Name}, args...)...)
}

// Try runs a command inside the namespace and returns its output and error.
func (ns *NS) Try(args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns.Name}, args...)...).CombinedOutput()
	return string(out), err
}

// List returns `nft -s list ruleset` in the namespace, normalized.
func (ns *NS) List(t testing.TB) string {
	t.Helper()
	return Normalize(ns.Exec(t, "nft", "-s", "list", "ruleset"))
}

// Do runs fn on a thread switched into the namespace; sockets made there
// stay in it.
func (ns *NS) Do(t testing.TB, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	if err := netns.Set(netns.NsHandle(ns.FD)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			panic(err) // never leave a thread in the wrong namespace
		}
	}()
	fn()
}

// Normalize makes `nft list` output and nft.Dump output comparable: wrapped
// element lists joined on one line with their elements sorted as text,
// blank lines dropped, the blocks of each table ordered sets, maps, chains
// (each by name) and tables ordered by family and name.
func Normalize(text string) string {
	var tables [][]string
	var cur []string
	lines := joinElements(strings.Split(text, "\n"))
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if strings.HasPrefix(l, "table ") {
			cur = []string{l}
			continue
		}
		cur = append(cur, l)
		if l == "}" {
			tables = append(tables, sortBlocks(cur))
		}
	}
	slices.SortFunc(tables, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	var out strings.Builder
	for _, t := range tables {
		out.WriteString(strings.Join(t, "\n") + "\n")
	}
	return out.String()
}

// joinElements joins an element list nft wrapped over several lines and
// sorts its elements.
func joinElements(lines []string) []string {
	var out []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.Contains(l, "elements = {") {
			out = append(out, l)
			continue
		}
		for !strings.HasSuffix(strings.TrimSpace(l), "}") && i+1 < len(lines) {
			i++
			l += " " + strings.TrimSpace(lines[i])
		}
		out = append(out, sortElements(l))
	}
	return out
}

func sortElements(l string) string {
	head, rest, _ := strings.Cut(l, "elements = {")
	body := strings.TrimSuffix(strings.TrimSpace(rest), "}")
	var elems []string
	for _, e := range strings.Split(body, ",") {
		if e = strings.TrimSpace(e); e != "" {
			elems = append(elems, e)
		}
	}
	slices.Sort(elems)
	return head + "elements = { " + strings.Join(elems, ", ") + " }"
}

// sortBlocks orders a table's blocks: sets, maps, then chains, by name.
func sortBlocks(table []string) []string {
	var blocks [][]string
	for i := 1; i < len(table)-1; i++ {
		if strings.HasPrefix(table[i], "\t") && !strings.HasPrefix(table[i], "\t\t") && table[i] != "\t}" {
			blocks = append(blocks, []string{table[i]})
			continue
		}
		if len(blocks) > 0 {
			blocks[len(blocks)-1] = append(blocks[len(blocks)-1], table[i])
		}
	}
	rank := func(b []string) string {
		kind, name, _ := strings.Cut(strings.TrimSpace(b[0]), " ")
		return map[string]string{"set": "1", "map": "2", "chain": "3"}[kind] + name
	}
	slices.SortFunc(blocks, func(a, b []string) int { return strings.Compare(rank(a), rank(b)) })
	out := []string{table[0]}
	for _, b := range blocks {
		out = append(out, b...)
	}
	return append(out, "}")
}
