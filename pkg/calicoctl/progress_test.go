package calicoctl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/calicoctl/diags"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

func TestProgressDrawsOnlyOnATerminal(t *testing.T) {
	var tty, piped bytes.Buffer
	on := (&cli{stderr: &tty, stderrTTY: true}).newProgress("Work")
	off := (&cli{stderr: &piped}).newProgress("Work")
	for _, p := range []*progress{on, off} {
		for i := 0; i < 400; i++ {
			p.update(i, 400, "step")
		}
		p.finish()
	}
	if piped.Len() != 0 {
		t.Errorf("progress written to a pipe: %q", piped.String())
	}
	got := tty.String()
	if !strings.HasPrefix(got, "\rWork: 0/400 (0%) step\x1b[K\rWork: 4/400 (1%) step\x1b[K") || !strings.HasSuffix(got, "\rWork: 396/400 (99%) step\x1b[K\r\x1b[K") {
		t.Errorf("progress on a terminal: %q", got)
	}
	if n := strings.Count(got, "\r"); n != 101 { // one line per percent, and the clearing
		t.Errorf("%d redraws for 400 steps, want 101", n)
	}
}

// TestIsTerminal: a pipe is not a terminal; the master side of a pseudo-terminal is.
func TestIsTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(w) || isTerminal(&bytes.Buffer{}) {
		t.Error("a pipe or a buffer is taken for a terminal")
	}
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptmx.Close()
	if !isTerminal(ptmx) {
		t.Error("a pseudo-terminal is not recognised")
	}
}

// runTTY runs calicoctl like harness.run, with stderr taken for a terminal or not.
func (h *harness) runTTY(tty bool, stdin string, args ...string) runResult {
	h.t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := &cli{ctx: ctx, stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, env: noEnv, stderrTTY: tty}
	code := c.main(append(args, "--config", h.config))
	return runResult{code: code, stdout: out.String(), stderr: errb.String()}
}

func manyNetworkSets(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "---\napiVersion: projectcalico.org/v3\nkind: GlobalNetworkSet\nmetadata:\n  name: set-%d\nspec:\n  nets: [10.65.%d.0/24]\n", i, i)
	}
	return b.String()
}

// TestApplyProgress: a large apply draws progress on a terminal's stderr only; stdout is the
// same either way, and a small apply draws none.
func TestApplyProgress(t *testing.T) {
	h := newHarness(t)
	docs := manyNetworkSets(120)
	tty := h.runTTY(true, docs, "apply", "-f", "-")
	piped := h.runTTY(false, docs, "apply", "-f", "-")
	small := h.runTTY(true, manyNetworkSets(3), "apply", "-f", "-")
	want := "Successfully applied 120 'GlobalNetworkSet' resource(s)\n"
	if tty.code != 0 || piped.code != 0 || tty.stdout != want || piped.stdout != want {
		t.Fatalf("apply: %+v / %+v", tty, piped)
	}
	if !strings.Contains(tty.stderr, "\rApplying: 60/120 (50%)\x1b[K") || !strings.HasSuffix(tty.stderr, "\r\x1b[K") {
		t.Errorf("terminal stderr: %q", tty.stderr)
	}
	if piped.stderr != "" || small.stderr != "" {
		t.Errorf("progress when piped (%q) or for 3 documents (%q)", piped.stderr, small.stderr)
	}
}

func TestIPAMCheckProgress(t *testing.T) {
	h := newHarness(t)
	h.ok("", "apply", "-f", etcdtest.FixturePath("calicoctl-corpus.yaml"))
	etcdtest.LoadFixture(t, h.cli, "cni-ipam-and-status.json")
	tty := h.runTTY(true, "", "ipam", "check")
	piped := h.runTTY(false, "", "ipam", "check")
	if tty.code != 0 || tty.stdout != piped.stdout {
		t.Fatalf("check: %+v / %+v", tty, piped)
	}
	if !strings.Contains(tty.stderr, "\rChecking IPAM: 0/1 (0%) reading blocks\x1b[K") ||
		!strings.Contains(tty.stderr, "\rChecking IPAM: 4/5 (80%) checking affinities\x1b[K") {
		t.Errorf("terminal stderr: %q", tty.stderr)
	}
	if piped.stderr != "" {
		t.Errorf("progress when piped: %q", piped.stderr)
	}
}

// TestNodeDiagsOutput: node diags prints Project Calico's lines and the bundle's path on
// stdout, and its progress on a terminal's stderr only.
func TestNodeDiagsOutput(t *testing.T) {
	for _, tty := range []bool{true, false} {
		var out, errb bytes.Buffer
		c := &cli{ctx: context.Background(), stdout: &out, stderr: &errb, env: noEnv, stderrTTY: tty}
		h := &diags.Host{Root: t.TempDir(), LookPath: func(string) (string, error) { return "", os.ErrNotExist },
			DatastoreErr: fmt.Errorf("no etcd here")}
		dir := t.TempDir()
		if err := c.writeDiags(h, dir); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(out.String(), "\n")
		if lines[0] != "Collecting diagnostics" || !strings.HasPrefix(lines[len(lines)-3], "Diags saved to "+dir+"/diags-") ||
			!strings.Contains(out.String(), "Some diagnostics could not be collected (their errors are in the bundle): ") {
			t.Errorf("stdout:\n%s", out.String())
		}
		if path := strings.TrimPrefix(lines[len(lines)-3], "Diags saved to "); !fileExists(path) {
			t.Errorf("bundle %s does not exist", path)
		}
		if tty != strings.Contains(errb.String(), "\rCollecting diagnostics: 0/12 (0%) versions\x1b[K") {
			t.Errorf("tty=%v, stderr %q", tty, errb.String())
		}
		if !tty && errb.Len() != 0 {
			t.Errorf("progress when piped: %q", errb.String())
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
