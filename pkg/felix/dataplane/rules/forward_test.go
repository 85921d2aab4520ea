package rules

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/nft"
)

// TestForwardChainEnds: a host endpoint's forward chain (applyOnForward policy) ends after its
// tiers, as Project Calico's does: no profiles and no "no profile matched" drop, so what is
// passed out of the last tier returns without a verdict (filter FORWARD accepts it). A tier
// whose default action is not Pass still drops at its end; without policy in the chain's
// direction the chain allows. The normal chain of the same endpoint keeps its profiles and
// final drop, and the untracked and preDNAT chains have no drop of their own.
func TestForwardChainEnds(t *testing.T) {
	cfg := testConfig(false)
	tiers := []calc.TierInfo{
		{Name: "one", DefaultAction: "Deny", IngressPolicies: []calc.PolicyID{pid("a")}},
		{Name: "two", DefaultAction: "Pass", IngressPolicies: []calc.PolicyID{pid("b")}},
	}
	endOfOne := `meta mark & 0x00020000 == 0x00000000 counter drop comment "End of tier one. Drop if no policies passed packet"`
	for _, tc := range []struct {
		name      string
		spec      chainSpec
		last      string
		drops     []string // every drop of the chain after conntrack's
		noProfile bool
	}{
		{"forward ingress", chainSpec{kind: kindForward, tiers: tiers},
			"meta mark & 0x00010000 == 0x00010000 return", []string{endOfOne}, true},
		{"forward egress: no policy in the direction", chainSpec{kind: kindForward, egress: true, tiers: tiers},
			`meta mark set meta mark | 0x00010000 return comment "Allow forwarded traffic by default"`, nil, true},
		{"forward without tiers", chainSpec{kind: kindForward},
			`meta mark set meta mark | 0x00010000 return comment "Allow forwarded traffic by default"`, nil, true},
		{"normal", chainSpec{kind: kindNormal, tiers: tiers, profiles: []string{"p"}},
			`counter drop comment "Drop if no profiles matched"`, []string{endOfOne, `counter drop comment "Drop if no profiles matched"`}, false},
		{"preDNAT", chainSpec{layer: Mangle, kind: kindPreDNAT, tiers: tiers},
			"meta mark & 0x00010000 == 0x00010000 return", nil, true},
		{"untracked", chainSpec{layer: Raw, kind: kindUntracked, tiers: tiers},
			"meta mark & 0x00010000 == 0x00010000 notrack return", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.name, tc.spec.group = "x", Singletons
			if tc.spec.layer == "" {
				tc.spec.layer = Filter
			}
			c, refs := endpointChain(cfg, tc.spec)
			got := ruleTexts(nft.IPv4, c.Rules)
			if got[len(got)-1] != tc.last {
				t.Errorf("last rule %q, want %q\n%s", got[len(got)-1], tc.last, strings.Join(got, "\n"))
			}
			var drops []string
			for _, r := range got {
				if strings.Contains(r, "drop") && !strings.HasPrefix(r, "ct state") {
					drops = append(drops, r)
				}
			}
			if diff := cmp.Diff(tc.drops, drops); diff != "" {
				t.Errorf("drops (-want +got):\n%s", diff)
			}
			if profiled := slices.ContainsFunc(refs, func(r Ref) bool { return r.Profile != "" }); profiled == tc.noProfile {
				t.Errorf("profile references %v", refs)
			}
		})
	}
}
