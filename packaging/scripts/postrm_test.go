package scripts

import (
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestFelixPostrmPurgeRoutes runs felix-postrm.sh purge in a network namespace of its own (and a
// mount namespace with empty /var/lib/calico and /var/run/calico): it removes felix's routes,
// protocol 80 in every table and boot through cali* interfaces, and felix's WireGuard routing
// rules, and leaves the boot and static routes through other interfaces and other rules alone.
// (This kernel has no wireguard driver: the WireGuard devices' removal is not exercised here.)
func TestFelixPostrmPurgeRoutes(t *testing.T) {
	netnstest.Require(t, "unshare")
	ns := netnstest.New(t, "postrm")
	ip := func(args ...string) string { return ns.IP(t, args...) }
	ip("link", "add", "eth0", "type", "veth", "peer", "name", "eth0p")
	ip("link", "add", "cali1", "type", "veth", "peer", "name", "cali1p")
	for _, l := range []string{"eth0", "eth0p", "cali1", "cali1p"} {
		ip("link", "set", l, "up")
	}
	ip("addr", "add", "198.18.0.1/24", "dev", "eth0")
	ip("route", "add", "10.65.0.1/32", "dev", "cali1", "metric", "1024")                          // felix's (boot)
	ip("-6", "route", "add", "fd5c::1/128", "dev", "cali1", "metric", "1024")                     // felix's (boot)
	ip("route", "add", "10.65.2.0/26", "via", "198.18.0.3", "proto", "80")                        // felix's
	ip("route", "add", "10.65.3.0/26", "dev", "eth0", "table", "100", "proto", "80")              // felix's
	ip("route", "add", "198.18.77.0/24", "dev", "eth0")                                           // boot, not felix's
	ip("route", "add", "198.18.78.0/24", "dev", "eth0", "proto", "static")                        // not felix's
	ip("route", "add", "10.65.9.9/32", "dev", "cali1", "proto", "static")                         // not felix's
	ip("rule", "add", "priority", "99", "not", "fwmark", "0x200000/0x200000", "table", "1")       // felix's (WireGuard)
	ip("-6", "rule", "add", "priority", "99", "not", "fwmark", "0x200000/0x200000", "table", "2") // felix's (WireGuard)
	ip("rule", "add", "priority", "99", "from", "198.18.5.0/24", "table", "100")                  // not felix's

	// The script removes state files: give it empty directories (the host's stay untouched).
	script := "for d in /var/lib/calico /var/run/calico; do [ ! -d $d ] || mount -t tmpfs none $d || exit 1; done; exec sh ./felix-postrm.sh purge"
	out := ns.Exec(t, "unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	if !strings.Contains(out, "calico-felix purged") {
		t.Errorf("purge output: %s", out)
	}
	left := ip("route", "show", "table", "all") + ip("-6", "route", "show", "table", "all")
	for _, gone := range []string{"10.65.0.1 ", "fd5c::1 ", "10.65.2.0/26", "10.65.3.0/26"} {
		if strings.Contains(left, gone) {
			t.Errorf("felix's route %s left:\n%s", gone, left)
		}
	}
	rules := ip("rule", "show", "priority", "99") + ip("-6", "rule", "show", "priority", "99")
	if strings.Contains(rules, "fwmark") || !strings.Contains(rules, "from 198.18.5.0/24 lookup 100") {
		t.Errorf("rules at priority 99 after purge (felix's WireGuard rules gone, the other kept):\n%s", rules)
	}
	for _, kept := range []string{"198.18.77.0/24 dev eth0", "198.18.78.0/24 dev eth0 proto static", "10.65.9.9 dev cali1 proto static"} {
		if !strings.Contains(left, kept) {
			t.Errorf("route %q was removed:\n%s", kept, left)
		}
	}
}
