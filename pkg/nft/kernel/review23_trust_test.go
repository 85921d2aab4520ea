package kernel

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/apply"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
)

// trustTable is table ip calico with an interval set "big" of n addresses (plus extra) and a
// chain dropping its sources.
func trustTable(t *testing.T, n int, extra ...netip.Addr) *nft.Table {
	tb := nft.NewTable(nft.FamilyIP, "calico")
	s := &nft.Set{Name: "big", Type: nft.TypeIPv4Addr, Interval: true}
	for i := range n {
		s.Elements = append(s.Elements, nft.AddrElem(netip.AddrFrom4([4]byte{10, 66, byte(i >> 8), byte(2 * i)})))
	}
	for _, a := range extra {
		s.Elements = append(s.Elements, nft.AddrElem(a))
	}
	must(t, tb.PutSet(s))
	must(t, tb.PutChain(&nft.Chain{Name: "filter-INPUT", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookInput},
		Rules: []nft.Rule{nft.NewRule(nft.SAddrInSet(nft.IPv4, "big"), nft.Drop())}}))
	return tb
}

// TestKernelTrustAfterRestore (review of issue 23, point 6): the big-set trust says a set with
// the handle it knew is "the one it knew (not deleted and made again, say by a restore of a
// saved ruleset)". A restore of a saved listing of our table (delete the table, load the
// listing: what `nft -f` of a saved ruleset does) makes a new table whose objects are numbered
// from 1 again, so the set can come back with the same handle and the saved, stale elements.
// Here an address added to the deny set after the listing was saved is gone after the restore,
// and the next full sync does not put it back.
func TestKernelTrustAfterRestore(t *testing.T) {
	ns := nstest.New(t)
	k := newBackend(t, ns)
	a := apply.New(k, apply.Options{Tables: []nft.TableID{{Family: nft.FamilyIP, Name: "calico"}}, BigSet: 10,
		Log: logtest.Logger(t)})
	applyOK(t, a, trustTable(t, 20))
	saved := ns.Exec(t, "nft", "-a", "list", "table", "ip", "calico")
	late := netip.MustParseAddr("198.18.9.9")
	applyOK(t, a, trustTable(t, 20, late)) // a delta: the late address is denied from now on
	id := nft.TableID{Family: nft.FamilyIP, Name: "calico"}
	if !hasElement(t, k, id, "big", nft.AddrKey(late)) {
		t.Fatal("the late address is not in the set after the delta")
	}

	// The listing replayed as commands in the order its objects were made (set, chain, rule),
	// as a tool that saves and replays flat commands does.
	file := filepath.Join(t.TempDir(), "restore.nft")
	elems := saved[strings.Index(saved, "elements = {")+len("elements = ") : strings.Index(saved, "}")+1]
	must(t, os.WriteFile(file, []byte(`delete table ip calico
add table ip calico
add set ip calico big { type ipv4_addr; flags interval; elements = `+elems+` }
add chain ip calico filter-INPUT { type filter hook input priority filter; policy accept; }
add rule ip calico filter-INPUT ip saddr @big drop
`), 0o600))
	ns.Exec(t, "nft", "-f", file)
	t.Logf("before the restore:\n%s\nafter:\n%s", saved, ns.Exec(t, "nft", "-a", "list", "table", "ip", "calico"))

	a.RequestFullSync()
	st := applyOK(t, a, trustTable(t, 20, late))
	t.Logf("full sync after the restore: %+v", st)
	if !hasElement(t, k, id, "big", nft.AddrKey(late)) {
		t.Errorf("after a full sync, the address added after the saved listing is not in the deny set (sets trusted: %d); repaired after %d full syncs",
			st.SetsTrusted, 1+fullSyncsUntil(t, a, trustTable(t, 20, late), func() bool { return hasElement(t, k, id, "big", nft.AddrKey(late)) }))
	}
}

// fullSyncsUntil runs full syncs until ok (at most 20) and returns how many it took.
func fullSyncsUntil(t *testing.T, a *apply.Applier, tb *nft.Table, ok func() bool) int {
	t.Helper()
	ns := 0
	for ; !ok() && ns < 20; ns++ {
		a.RequestFullSync()
		applyOK(t, a, tb)
	}
	return ns
}

// TestKernelTrustBound: another program adds an address to (or deletes one from) our big deny
// set; the Applier trusts the set while its handle is the same, and writes it whole after
// TrustBigSets (10) full syncs: the repair bound README states. Each full sync follows another
// commit to an unrelated table, as on a host where other programs commit.
func TestKernelTrustBound(t *testing.T) {
	ns := nstest.New(t)
	k := newBackend(t, ns)
	id := nft.TableID{Family: nft.FamilyIP, Name: "calico"}
	a := apply.New(k, apply.Options{Tables: []nft.TableID{id}, BigSet: 10,
		Log: logtest.Logger(t)})
	tb := trustTable(t, 20)
	applyOK(t, a, tb)
	gone := netip.AddrFrom4([4]byte{10, 66, 0, 4})
	ns.Exec(t, "nft", "delete", "element", "ip", "calico", "big", "{ 10.66.0.4 }")
	n := 0
	for ; !hasElement(t, k, id, "big", nft.AddrKey(gone)) && n < 30; n++ {
		ns.Exec(t, "nft", "add", "table", "ip", fmt.Sprintf("other%d", n))
		a.RequestFullSync()
		applyOK(t, a, tb)
	}
	t.Logf("an element deleted by another program was put back by full sync %d", n)
	if n > 11 {
		t.Errorf("the element deleted by another program was not back after %d full syncs (bound: 10 trusted, then written whole)", n)
	}
}
