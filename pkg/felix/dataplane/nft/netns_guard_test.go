package nft

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestNetlinkRefusesOwnNamespace: under RefuseOwnNamespace (in force for this package's
// tests), a Netlink for this process's own namespace, or for something that is not a network
// namespace, fails every Read and Commit.
func TestNetlinkRefusesOwnNamespace(t *testing.T) {
	own, err := os.Open("/proc/self/ns/net")
	if err != nil {
		t.Skip(err)
	}
	defer own.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, tc := range []struct {
		name string
		fd   int
		want string
	}{
		{"unset", 0, "own network namespace"},
		{"own namespace", int(own.Fd()), "own network namespace"},
		{"not a namespace", int(null.Fd()), "not a network namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := NewNetlink(NetlinkConfig{NetNS: tc.fd})
			defer k.Close()
			_, rerr := k.Read(t.Context())
			_, cerr := k.Commit(t.Context(), &Transaction{Ops: []Op{{Kind: OpAddTable}}})
			for _, err := range []error{rerr, cerr} {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("got %v, want an error about %q", err, tc.want)
				}
			}
		})
	}
}

// TestNetlinkOwnsNamespaceDescriptor: the caller may close its namespace descriptor right
// after NewNetlink; the number being reused by another namespace file (here the process's own
// namespace, which is what mdlayher/socket opens while it switches) does not redirect the
// Netlink. Before the Netlink kept its own duplicate, a dataplane whose *os.File was garbage
// collected programmed the host's namespace this way.
func TestNetlinkOwnsNamespaceDescriptor(t *testing.T) {
	ns := newNetNS(t)
	f, err := os.Open("/run/netns/" + ns.name)
	if err != nil {
		t.Fatal(err)
	}
	k := NewNetlink(NetlinkConfig{NetNS: int(f.Fd())})
	defer k.Close()
	f.Close()
	reuse, err := os.Open("/proc/self/ns/net") // likely takes the number f had
	if err != nil {
		t.Skip(err)
	}
	defer reuse.Close()
	a := NewApplier(k, zerologNop())
	ns.apply(t, a, felixLike([]string{"cali1"}, "10.65.0.9"))
	if got := ns.exec(t, "nft", "list", "tables"); !strings.Contains(got, "table inet calico") {
		t.Errorf("the table is not in the test's namespace: %q", got)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Read(t.Context()); !errors.Is(err, errClosed) {
		t.Errorf("Read after Close: %v", err)
	}
}
