package nstest

import (
	"slices"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/netnstest"
)

// NS is a namespace from the privileged test kit (netnstest: Name, FD, Exec, Try, Do), with
// List for reading nft's view of it.
type NS struct{ *netnstest.NS }

// Require skips the test unless it runs as root with ip and nft.
func Require(t testing.TB) {
	t.Helper()
	netnstest.Require(t, "nft")
}

// New creates a fresh namespace with lo up, deleted when the test ends.
func New(t testing.TB) *NS {
	t.Helper()
	Require(t)
	return &NS{netnstest.New(t, "nft")}
}

// List returns `nft -s list ruleset` in the namespace, normalized.
func (ns *NS) List(t testing.TB) string {
	t.Helper()
	return Normalize(ns.Exec(t, "nft", "-s", "list", "ruleset"))
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
