package kernel

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nfttest"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestKernelGolden applies a ruleset that uses every expression in four
// families, then checks that `nft list ruleset` prints exactly the
// library's own dump (so dumps can serve as golden files), that the
// kernel's tables read back into the typed model dump the same, and that
// the dump is the golden file.
func TestKernelGolden(t *testing.T) {
	ns := nstest.New(t)
	k := newBackend(t, ns)
	tables := nfttest.Golden()
	a := newApplier(t, k, tables...)
	applyOK(t, a, tables...)

	dump := nft.Dump(tables...)
	if got, want := ns.List(t), nstest.Normalize(dump); got != want {
		t.Errorf("nft list differs from the dump:\n%s", lineDiff(got, want))
	}
	ids := make([]nft.TableID, len(tables))
	for i, tb := range tables {
		ids[i] = tb.ID()
	}
	read, err := k.Read(context.Background(), ids, nft.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := nft.Dump(read...); got != dump {
		t.Errorf("tables read back differ from the dump:\n%s", lineDiff(got, dump))
	}
	const golden = "testdata/golden.nft"
	if *update {
		must(t, os.WriteFile(golden, []byte(dump), 0o644))
	}
	want, err := os.ReadFile(golden)
	must(t, err)
	if dump != string(want) {
		t.Errorf("dump differs from %s:\n%s", golden, lineDiff(dump, string(want)))
	}
}
