package nft_test

import (
	"errors"
	"slices"
	"syscall"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
)

// TestCommitErrorCauses: of a refused batch's objects, the causes are the first refusal and
// every later one whose error another refusal cannot cause; a missing reference (ENOENT), an
// object in use (EBUSY) and a table-wide validation error repeated on later rules are left out.
func TestCommitErrorCauses(t *testing.T) {
	ip := nft.TableID{Family: nft.FamilyIP, Name: "t"}
	ip6 := nft.TableID{Family: nft.FamilyIP6, Name: "t"}
	rule := func(tb nft.TableID, chain string, err error) nft.ObjectError {
		return nft.ObjectError{Object: nft.Object{Kind: nft.ObjectRule, Table: tb, Name: chain, Rule: 0}, Op: nft.OpAddRule, Err: err}
	}
	set := nft.ObjectError{Object: nft.Object{Kind: nft.ObjectSet, Table: ip, Name: "s", Rule: -1}, Op: nft.OpAddElements, Err: syscall.EEXIST}
	ce := &nft.CommitError{Kernel: true, Objects: []nft.ObjectError{
		rule(ip, "a", syscall.ENOENT),     // first: a cause whatever its error
		rule(ip, "b", syscall.ERANGE),     // its own
		rule(ip, "c", syscall.ENOENT),     // may refer to a
		set,                               // its own
		rule(ip, "d", syscall.EMLINK),     // the table's first validation error
		rule(ip, "e", syscall.EMLINK),     // repeated
		rule(ip6, "f", syscall.EMLINK),    // another table's first
		rule(ip, "g", syscall.EOPNOTSUPP), // another validation error: its own
		rule(ip, "h", syscall.EBUSY),      // in use
		rule(ip, "b", syscall.ERANGE),     // b again
	}}
	var got []string
	for _, o := range ce.Causes() {
		got = append(got, o.Name)
	}
	if want := []string{"a", "b", "s", "d", "f", "g"}; !slices.Equal(got, want) {
		t.Errorf("causes %v, want %v", got, want)
	}
	enc := &nft.CommitError{Objects: []nft.ObjectError{rule(ip, "x", errors.New("cannot encode")), rule(ip, "y", syscall.ENOENT)}}
	if n := len(enc.Causes()); n != 2 {
		t.Errorf("%d causes of an encoder refusal, want both", n)
	}
}
