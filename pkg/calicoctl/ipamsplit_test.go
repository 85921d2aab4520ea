package calicoctl

import (
	"strings"
	"testing"
)

const poolsPrefix = "/calico/resources/v3/projectcalico.org/ippools/"

// TestIPAMSplit: split refuses an unlocked datastore, splits under the lock (pool gone, new
// pools with Project Calico's names, the fixture's blocks untouched), and unlock restores
// datastoreReady.
func TestIPAMSplit(t *testing.T) {
	h := ipamHarness(t)
	// The corpus' apply created ClusterInformation with datastoreReady true (ensureInitialized).
	r := h.fail("", "ipam", "split", "4", "--name", "pool-v4")
	if !strings.Contains(r.stderr, "datastore is not locked. Run the `calicoctl datastore migrate lock` command in order split the IP pools") {
		t.Errorf("unlocked: %s", r.stderr)
	}
	if r := h.ok("", "datastore", "migrate", "lock"); r.stdout != "Datastore locked.\n" {
		t.Errorf("lock: %q", r.stdout)
	}
	if ready := h.get(clusterInfoKey)["spec"].(map[string]any)["datastoreReady"]; ready != false {
		t.Fatalf("datastoreReady after lock: %v", ready)
	}
	blockBefore := h.get(v4Block)
	pool := h.get(poolsPrefix + "pool-v4")
	cidr := pool["spec"].(map[string]any)["cidr"].(string)
	r = h.ok("", "ipam", "split", "2", "--cidr", cidr)
	if !strings.HasPrefix(r.stdout, "IP Pool pool-v4 was successfully split into 2 smaller pools.\nCreated split-pool-v4-0 with CIDR ") ||
		!strings.HasSuffix(r.stdout, "Please refer to the documentation for final steps.\n") {
		t.Errorf("split output:\n%s", r.stdout)
	}
	if h.get(poolsPrefix+"pool-v4") != nil || h.get(poolsPrefix+"split-pool-v4-0") == nil || h.get(poolsPrefix+"split-pool-v4-1") == nil {
		t.Errorf("pools after split: %v", h.dump())
	}
	if d := diffJSON(blockBefore, h.get(v4Block)); d != "" {
		t.Errorf("split changed a block: %s", d)
	}
	h.ok("", "datastore", "migrate", "unlock")
	if ready := h.get(clusterInfoKey)["spec"].(map[string]any)["datastoreReady"]; ready != true {
		t.Fatalf("datastoreReady after unlock: %v", ready)
	}
}

func TestIPAMSplitArguments(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ipam", "split", "two", "--name", "p"}, "error reading number to split IP pools into. two is not a valid number"},
		{[]string{"ipam", "split", "2"}, "no name or CIDR provided. Provide a name or CIDR to denote the IP pool to split"},
		{[]string{"ipam", "split", "--name", "p"}, "Invalid option: 'calicoctl ipam split --name p --config"},
		{[]string{"ipam", "split", "2", "--name", "p"}, "error while checking if datastore was locked"},
	} {
		if r := h.fail("", tc.args...); !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: %s, want %q", tc.args, r.stderr, tc.want)
		}
	}
}

// TestRefusedCommands: Project Calico's commands calico-host does not implement accept Calico's
// options and --help, then fail saying why; nothing is written.
func TestRefusedCommands(t *testing.T) {
	h := newHarness(t)
	for _, args := range [][]string{
		{"node", "run", "--ip", "198.18.0.1", "--dryrun"},
		{"cluster", "diags", "--since", "1h", "--skip-temp-dir-cleanup"},
		{"datastore", "migrate", "export"},
		{"datastore", "migrate-policy-names"},
	} {
		r := h.fail("", args...)
		want := "calicoctl " + strings.Join(args[:len(args)-countOpts(args)], " ") + " is not supported by calico-host: "
		if !strings.HasPrefix(r.stderr, want) {
			t.Errorf("%v: %q, want prefix %q", args, r.stderr, want)
		}
		if r := h.ok("", append(args, "--help")...); !strings.Contains(r.stdout, "Not supported by calico-host") {
			t.Errorf("%v --help: %q", args, r.stdout)
		}
	}
	// Project Calico's calicoctl imports into Kubernetes only, and calico-host's datastore is etcd.
	r := h.fail("", "datastore", "migrate", "import", "-f", "x.yaml")
	if want := "invalid datastore type: etcdv3 to import to for datastore migration. Datastore type must be kubernetes\n"; r.stderr != want {
		t.Errorf("datastore migrate import: %q, want %q", r.stderr, want)
	}
	if d := h.dump(); len(d) != 0 {
		t.Errorf("refused commands wrote %v", d)
	}
}

// countOpts counts the trailing option words of args (from the first one starting with "-").
func countOpts(args []string) int {
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			return len(args) - i
		}
	}
	return 0
}
