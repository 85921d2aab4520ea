package calicoctl

import (
	"strings"
	"testing"
)

// TestWriteWarnsAboutSettingsNotImplemented: apply, create and replace print a warning on
// stderr for each setting calico-host does not implement, exit 0 and store the object as given;
// implemented settings and defaults do not warn.
func TestWriteWarnsAboutSettingsNotImplemented(t *testing.T) {
	h := newHarness(t)
	fc := `apiVersion: projectcalico.org/v3
kind: FelixConfiguration
metadata:
  name: default
spec:
  bpfEnabled: true
  iptablesBackend: Auto
  nftablesMode: Enabled
  netlinkTimeout: 20s
  reportingInterval: 10s
`
	peer := `apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata:
  name: p
spec:
  peerIP: 198.18.0.254
  asNumber: 65001
  keepaliveTime: 10s
`
	pool := `apiVersion: projectcalico.org/v3
kind: IPPool
metadata:
  name: manual
spec:
  cidr: 10.65.0.0/16
  assignmentMode: Manual
`
	for _, tc := range []struct {
		cmd, doc string
		want     []string
	}{
		{"create", fc, []string{"FelixConfiguration default: spec.bpfEnabled", "FelixConfiguration default: spec.netlinkTimeout"}},
		{"replace", strings.Replace(fc, "bpfEnabled: true", "bpfEnabled: false", 1), []string{"FelixConfiguration default: spec.netlinkTimeout"}},
		{"apply", peer, nil},
		{"apply", pool, []string{"IPPool manual: spec.assignmentMode"}},
	} {
		r := h.ok(tc.doc, tc.cmd, "-f", "-")
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
			if line == "" {
				continue
			}
			if !strings.HasPrefix(line, "Warning: ") || !strings.Contains(line, "which calico-host does not implement") {
				t.Errorf("%s: unexpected stderr line %q", tc.cmd, line)
			}
			got = append(got, line)
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d warnings, want %d:\n%s", tc.cmd, len(got), len(tc.want), r.stderr)
		}
		for i, w := range tc.want {
			if i < len(got) && !strings.Contains(got[i], w) {
				t.Errorf("%s: warning %q does not name %q", tc.cmd, got[i], w)
			}
		}
	}
	out := h.ok("", "get", "felixconfiguration", "default", "-o", "yaml").stdout
	if !strings.Contains(out, "netlinkTimeout: 20s") || !strings.Contains(out, "bpfEnabled: false") {
		t.Errorf("FelixConfiguration not stored as given:\n%s", out)
	}
}
