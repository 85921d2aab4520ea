package apply_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/apply"
	"github.com/calico-host/calico-host/pkg/nft/fake"
)

// bigTable is small() with a set "big" of n single addresses (big from 10 elements here).
func bigTable(n int) *nft.Table {
	t := small()
	s := &nft.Set{Name: "big", Type: nft.TypeIPv4Addr, Interval: true}
	for i := range n {
		s.Elements = append(s.Elements, nft.AddrElem(netip.AddrFrom4([4]byte{10, 66, byte(i >> 8), byte(2 * i)})))
	}
	mustPut(t.PutSet(s))
	mustPut(t.PutChain(&nft.Chain{Name: "deny", Rules: []nft.Rule{nft.NewRule(nft.SAddrInSet(nft.IPv4, "big"), nft.Drop())}}))
	return t
}

func newBigApplier(t testing.TB, b nft.Backend, trust int) *apply.Applier {
	return apply.New(b, apply.Options{Tables: []nft.TableID{ipCalico}, BigSet: 10, TrustBigSets: trust,
		Log: logtest.Logger(t)})
}

// elementsOf is what the fake holds in set name.
func elementsOf(t *testing.T, b *fake.Backend, name string) []nft.Element {
	t.Helper()
	rd, err := b.Read(context.Background(), []nft.TableID{ipCalico}, nft.ReadOptions{})
	if err != nil || len(rd) != 1 || rd[0].Set(name) == nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return rd[0].Set(name).Elements
}

// moveGeneration commits to another table, as another program would: the ruleset generation
// moves without a change to ours.
func moveGeneration(b *fake.Backend) {
	b.Tamper(nft.TableID{Family: nft.FamilyIP, Name: "other"}, func(*nft.Table) *nft.Table {
		return nft.NewTable(nft.FamilyIP, "other")
	})
}

func lastRead(b *fake.Backend, name string) bool {
	r := b.ElementsRead(ipCalico, name)
	return r[len(r)-1]
}

// TestFullSyncUnchangedGeneration: while nothing committed to the ruleset since the Applier's
// last commit, a full sync reads nothing and commits nothing; once the generation moved it
// reads the tables.
func TestFullSyncUnchangedGeneration(t *testing.T) {
	b := fake.New()
	tb := bigTable(20)
	a := newBigApplier(t, b, 10)
	applyOK(t, a, tb)
	reads := len(b.ElementsRead(ipCalico, "allowed"))
	a.RequestFullSync()
	if st := applyOK(t, a, tb); !st.FullSync || !st.Unchanged || st.Ops != 0 {
		t.Errorf("full sync with the generation unchanged: %+v", st)
	}
	if n := len(b.ElementsRead(ipCalico, "allowed")); n != reads {
		t.Errorf("the backend was read %d times, want %d", n, reads)
	}
	moveGeneration(b)
	a.RequestFullSync()
	if st := applyOK(t, a, tb); st.Unchanged || len(b.ElementsRead(ipCalico, "allowed")) != reads+1 {
		t.Errorf("full sync after the generation moved did not read: %+v", st)
	}
}

// TestFullSyncBigSets: a full sync never reads a big set's elements: it trusts the mirror (the
// same set: the handle read after the commit that made it), up to TrustBigSets in a row; then
// it writes the set whole. Small sets are read.
func TestFullSyncBigSets(t *testing.T) {
	b := fake.New()
	tb := bigTable(20)
	a := newBigApplier(t, b, 2)
	applyOK(t, a, tb)
	for i, want := range []struct{ trusted, rewritten int }{{1, 0}, {1, 0}, {0, 1}, {1, 0}, {1, 0}, {0, 1}} {
		moveGeneration(b)
		a.RequestFullSync()
		st := applyOK(t, a, tb)
		if st.SetsTrusted != want.trusted || st.SetsRewritten != want.rewritten {
			t.Errorf("full sync %d: %d sets trusted, %d rewritten; want %d and %d", i, st.SetsTrusted, st.SetsRewritten, want.trusted, want.rewritten)
		}
		if lastRead(b, "big") || !lastRead(b, "allowed") {
			t.Errorf("full sync %d read the big set's elements, or not the small set's", i)
		}
	}
	if got := elementsOf(t, b, "big"); !slices.Equal(got, tb.Set("big").Elements) {
		t.Errorf("the big set holds %d elements, want %d", len(got), len(tb.Set("big").Elements))
	}
}

// TestFullSyncBigSetDrift: a big set changed behind the Applier's back is repaired: at once when
// it was made again (a restore of a saved ruleset: another handle); when only its elements were
// changed in place, at the latest by the full sync that stops trusting it (TrustBigSets).
func TestFullSyncBigSetDrift(t *testing.T) {
	b := fake.New()
	tb := bigTable(20)
	a := newBigApplier(t, b, 2)
	applyOK(t, a, tb)
	moveGeneration(b)
	a.RequestFullSync()
	applyOK(t, a, tb)
	want := tb.Set("big").Elements
	drift := func(sameSet bool) {
		b.Tamper(ipCalico, func(cur *nft.Table) *nft.Table {
			s := cur.Set("big")
			s.Elements = s.Elements[:5]
			if !sameSet {
				s.Handle = 0 // made again
			}
			cur.InsertSet(s)
			return cur
		})
	}
	drift(false)
	a.RequestFullSync()
	if st := applyOK(t, a, tb); st.SetsRewritten != 1 || !slices.Equal(elementsOf(t, b, "big"), want) {
		t.Fatalf("a big set made again was not written whole: %+v", st)
	}
	drift(true)
	for i := 0; i < 3 && !slices.Equal(elementsOf(t, b, "big"), want); i++ {
		a.RequestFullSync()
		applyOK(t, a, tb)
	}
	if !slices.Equal(elementsOf(t, b, "big"), want) {
		t.Fatal("a big set changed in place was not repaired within TrustBigSets+1 full syncs")
	}
}

// lostReply is the fake committing a batch and then failing as if the reply were lost: the
// Applier cannot tell whether it applied.
type lostReply struct {
	*fake.Backend
	lose bool
}

func (l *lostReply) Commit(ctx context.Context, b *nft.Batch) (nft.CommitInfo, error) {
	info, err := l.Backend.Commit(ctx, b)
	if err == nil && l.lose {
		l.lose = false
		return info, errors.New("reading the kernel's replies: timeout")
	}
	return info, err
}

// TestFullSyncAfterLostCommit: after a commit that failed without saying whether it applied (it
// did), the next full sync writes the big sets it touched whole instead of trusting the mirror.
func TestFullSyncAfterLostCommit(t *testing.T) {
	l := &lostReply{Backend: fake.New()}
	tb := bigTable(20)
	a := newBigApplier(t, l, 10)
	applyOK(t, a, tb)
	moveGeneration(l.Backend)
	a.RequestFullSync()
	applyOK(t, a, tb)
	l.lose = true
	mustPut(tb.UpdateSet("big", nil, tb.Set("big").Elements[:3]))
	if _, err := a.Apply(context.Background(), tb); err == nil {
		t.Fatal("the lost commit did not fail")
	}
	// The desired set goes back to what the mirror held: only a whole write can be right now.
	full := bigTable(20)
	st := applyOK(t, a, full)
	if !st.FullSync || st.SetsRewritten != 1 {
		t.Errorf("full sync after the lost commit: %+v", st)
	}
	if got := elementsOf(t, l.Backend, "big"); len(got) != 20 {
		t.Errorf("the big set holds %d elements, want 20: %s", len(got), fmt.Sprint(got[:min(3, len(got))]))
	}
}
