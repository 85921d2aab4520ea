package calicoctl

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

const (
	v4Block = "/calico/ipam/v2/assignment/ipv4/block/10.65.54.0-26"
	handle  = "/calico/ipam/v2/handle/calico-net.cidpwl20000000000"
)

// ipamHarness has the corpus' pools and the CNI fixture's blocks, affinities and handle.
func ipamHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.ok("", "apply", "-f", etcdtest.FixturePath("calicoctl-corpus.yaml"))
	etcdtest.LoadFixture(t, h.cli, "cni-ipam-and-status.json")
	return h
}

func TestIPAMCheckAndReleaseFromReport(t *testing.T) {
	h := ipamHarness(t)
	r := h.ok("", "ipam", "check")
	want := `Checking IPAM for inconsistencies...

Found 2 IPAM blocks, 1 handles and 2 affinities.
IPAM blocks record 2 allocations.

Found 0 IPs that are leaked (allocated with no handle that can release them).
Found 0 handle counts that do not match the blocks.
Found 0 blocks affine to a host that has no affinity for them.
Found 0 confirmed affinities without a block.
Found 0 pending affinities (interrupted claims or releases).
Found 0 corrupt blocks.

Check complete; found 0 problems.
`
	if r.stdout != want {
		t.Errorf("check:\n%s\nwant:\n%s", r.stdout, want)
	}
	// Without its handle, both addresses of the container are leaked.
	if _, err := h.cli.Delete(context.Background(), handle); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "report.json")
	if r = h.ok("", "ipam", "check"); !strings.Contains(r.stdout, "Found 2 IPs that are leaked (allocated with no handle that can release them).\nFound 0 handle") {
		t.Errorf("without --show-problem-ips the leaked addresses are counted, not listed:\n%s", r.stdout)
	}
	r = h.ok("", "ipam", "check", "-o", report, "--show-problem-ips")
	for _, line := range []string{
		"Found 2 IPs that are leaked (allocated with no handle that can release them).\n" +
			"  10.65.54.0 in block 10.65.54.0/26 (handle \"calico-net.cidpwl20000000000\") leaked; attrs Main:calico-net.cidpwl20000000000 Extra:",
		"  fd5c:1:2:13f2:fcce:4caf:5a2d:bc40 in block fd5c:1:2:13f2:fcce:4caf:5a2d:bc40/122 (handle \"calico-net.cidpwl20000000000\") leaked; attrs Main:",
		"Check complete; found 2 problems.\nReport written to " + report + "\n",
	} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("check output lacks %q:\n%s", line, r.stdout)
		}
	}
	r = h.ok("", "ipam", "release", "--from-report", report)
	if want := "Successfully released IP address 10.65.54.0\nSuccessfully released IP address fd5c:1:2:13f2:fcce:4caf:5a2d:bc40\n"; r.stdout != want {
		t.Errorf("release: %q, want %q", r.stdout, want)
	}
	if r = h.ok("", "ipam", "check"); !strings.Contains(r.stdout, "IPAM blocks record 0 allocations.") ||
		!strings.Contains(r.stdout, "found 0 problems") {
		t.Errorf("after release:\n%s", r.stdout)
	}
}

func TestIPAMRelease(t *testing.T) {
	h := ipamHarness(t)
	r := h.ok("", "ipam", "release", "--ip=10.65.54.0")
	if r.stdout != "Successfully released IP address 10.65.54.0\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	if allocs := h.get(v4Block)["allocations"].([]any); allocs[0] != nil {
		t.Errorf("ordinal 0 still allocated: %v", allocs[0])
	}
	r = h.fail("", "ipam", "release", "--ip", "10.65.54.0")
	if r.stderr != "IP address 10.65.54.0 is not assigned\n" {
		t.Errorf("stderr %q", r.stderr)
	}
	if r = h.fail("", "ipam", "release"); !strings.HasPrefix(r.stderr, "Invalid option: 'calicoctl ipam release") {
		t.Errorf("release without --ip: %q", r.stderr)
	}
}

func TestIPAMShow(t *testing.T) {
	h := ipamHarness(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"ipam", "show"}, `+----------+---------------+---------------------------+------------+----------------------------------+
| GROUPING |     CIDR      |         IPS TOTAL         | IPS IN USE |             IPS FREE             |
+----------+---------------+---------------------------+------------+----------------------------------+
| IP Pool  | 10.65.0.0/16  |                     65536 | 1 (0%)     | 65535 (100%)                     |
| IP Pool  | 10.66.0.0/24  |                       256 | 0 (0%)     | 256 (100%)                       |
| IP Pool  | fd5c:1:2::/48 | 1208925819614629174706176 | 1 (0%)     | 1208925819614629174706175 (100%) |
+----------+---------------+---------------------------+------------+----------------------------------+
`},
		{[]string{"ipam", "show", "--show-configuration"}, `+--------------------+-------+
|      PROPERTY      | VALUE |
+--------------------+-------+
| StrictAffinity     | false |
| AutoAllocateBlocks | true  |
| MaxBlocksPerHost   |     0 |
+--------------------+-------+
`},
		{[]string{"ipam", "show", "--ip", "10.65.54.1"}, "IP 10.65.54.1 is not currently assigned\n"},
		{[]string{"ipam", "show", "--ip", "10.65.54.0"}, "IP 10.65.54.0 is in use\nHandle ID: calico-net.cidpwl20000000000\nAttributes:\n" +
			"  node: host-a\n  timestamp: 2026-11-29 13:16:37.859440465 +0000 UTC\n"},
	}
	for _, tc := range tests {
		if got := h.ok("", tc.args...).stdout; got != tc.want {
			t.Errorf("%v:\n%s\nwant:\n%s", tc.args, got, tc.want)
		}
	}
	blocks := h.ok("", "ipam", "show", "--show-blocks").stdout
	if !strings.Contains(blocks, "| Block    | 10.65.54.0/26                         |                        64 | 1 (2%)     | 63 (98%)                         |\n") {
		t.Errorf("--show-blocks:\n%s", blocks)
	}
}

func TestIPAMConfigure(t *testing.T) {
	h := ipamHarness(t)
	r := h.ok("", "ipam", "configure", "--strictaffinity=true", "--max-blocks-per-host=4")
	if r.stdout != "Successfully set StrictAffinity to: true\nSuccessfully set MaxBlocksPerHost to: 4\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	got := h.get("/calico/ipam/v2/config")
	if d := diffJSON(map[string]any{"strict_affinity": true, "auto_allocate_blocks": true, "maxBlocksPerHost": float64(4)}, any(got)); d != "" {
		t.Errorf("/calico/ipam/v2/config:\n%s", d)
	}
	if r = h.fail("", "ipam", "configure", "--strictaffinity=maybe"); r.stderr != "invalid value. Use true or false to set strictaffinity\n" {
		t.Errorf("stderr %q", r.stderr)
	}
	// Only some settings: the others are kept.
	if r = h.ok("", "ipam", "configure", "--max-blocks-per-host=2", "--ip-cooldown-seconds=0"); r.stdout != "Successfully set MaxBlocksPerHost to: 2\nSuccessfully set IPCooldownSeconds to: 0\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	if d := diffJSON(map[string]any{"strict_affinity": true, "auto_allocate_blocks": true, "maxBlocksPerHost": float64(2)}, any(h.get("/calico/ipam/v2/config"))); d != "" {
		t.Errorf("/calico/ipam/v2/config:\n%s", d)
	}
	// What calico-host's IPAM cannot do is refused, and nothing is written.
	before := h.revision()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ip-cooldown-seconds=30"}, "IP cooldown is not implemented by calico-host's IPAM"},
		{[]string{"--strictaffinity=false", "--ip-cooldown-seconds=30"}, "only 0 is accepted"},
		{[]string{"--kubevirt-ip-persistence=Enabled"}, "not supported by calico-host"},
		{[]string{"--kubevirt-ip-persistence=Sometimes"}, "Use Enabled or Disabled"},
		{[]string{"--ip-cooldown-seconds=soon"}, "invalid value for --ip-cooldown-seconds"},
		{nil, "at least one configuration option must be specified"},
	} {
		if r := h.fail("", append([]string{"ipam", "configure"}, tc.args...)...); !strings.Contains(r.stderr, tc.want) {
			t.Errorf("configure %v: stderr %q, want %q", tc.args, r.stderr, tc.want)
		}
	}
	if h.revision() != before {
		t.Error("a refused configure wrote to etcd")
	}
}

// TestIPAMCheckShowAllIPs: --show-all-ips lists every allocation under its block with its
// attributes, in Project Calico's format.
func TestIPAMCheckShowAllIPs(t *testing.T) {
	h := ipamHarness(t)
	r := h.ok("", "ipam", "check", "--show-all-ips")
	want := "Found 2 IPAM blocks, 1 handles and 2 affinities.\n" +
		" IPAM block 10.65.54.0/26 affinity=host:host-a:\n" +
		"  10.65.54.0 allocated; attrs Main:calico-net.cidpwl20000000000 Extra:node=host-a,timestamp=2026-11-29 13:16:37.859440465 +0000 UTC\n" +
		" IPAM block fd5c:1:2:13f2:fcce:4caf:5a2d:bc40/122 affinity=host:host-a:\n" +
		"  fd5c:1:2:13f2:fcce:4caf:5a2d:bc40 allocated; attrs Main:calico-net.cidpwl20000000000 Extra:"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("check --show-all-ips:\n%s\nwant it to contain:\n%s", r.stdout, want)
	}
	if plain := h.ok("", "ipam", "check").stdout; strings.Contains(plain, "allocated; attrs") {
		t.Errorf("allocations listed without --show-all-ips:\n%s", plain)
	}
}
