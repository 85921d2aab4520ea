package policydiff

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/selector"
)

// verdictClass names the step of the trace that decided a packet.
var verdictClass = regexp.MustCompile(`(rule \d+: (Allow|Deny|Pass)|default action Pass|end of tier drop|no profile accepted|encapsulated|` +
	`no applyOnForward policy|passed out of the last tier)`)

// TestGeneratorCoverage checks (without a dataplane) that the CI seed's scenarios exercise every
// kind of decision, in the chains of workloads and in the forward chains of host endpoints
// (classes prefixed "forward "), and that neither verdict dominates.
func TestGeneratorCoverage(t *testing.T) {
	classes := map[string]int{}
	var packets, delivered int
	kinds := map[string]int{}
	v := api.Validator{CheckSelector: func(s string) error { _, err := selector.Parse(s); return err }}
	for i := range *flagScenarios {
		sc, err := newScenario(*flagSeed, i, *flagProbes)
		if err != nil {
			t.Fatal(err)
		}
		// The generator writes only objects Project Calico accepts; our validation (which
		// felix applies on read) must accept them too, or felix would ignore them.
		for _, o := range sc.U.Objects() {
			if err := v.Validate(o); err != nil {
				t.Errorf("scenario %d: %v", i, err)
			}
		}
		for _, p := range sc.Probes {
			packets++
			if p.Want {
				delivered++
			}
			chain := "" // "forward " in the chains of host endpoints
			for _, line := range p.Trace {
				if !strings.HasPrefix(line, " ") {
					chain = ""
					if strings.HasPrefix(line, "forward ") {
						chain = "forward "
					}
				}
				if strings.HasPrefix(line, "  profile ") {
					classes["profile "+strings.Fields(line)[4]]++
				} else if m := verdictClass.FindString(line); m != "" {
					classes[chain+regexp.MustCompile(`\d+`).ReplaceAllString(m, "N")]++
				}
				if strings.Contains(line, "tier ") && strings.Contains(line, "Policy ") {
					kinds[strings.Fields(line)[2]]++
				}
				if strings.HasPrefix(line, "  profile ") {
					kinds["profile"]++
				}
			}
		}
	}
	var names []string
	for k := range classes {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		t.Logf("%-40s %d", k, classes[k])
	}
	t.Logf("deciding objects: %v", kinds)
	t.Logf("%d packets, %d delivered (%.0f%%)", packets, delivered, 100*float64(delivered)/float64(packets))
	for _, want := range []string{"rule N: Allow", "rule N: Deny", "rule N: Pass", "default action Pass", "end of tier drop",
		"no profile accepted", "encapsulated", "profile Allow", "profile Deny", "profile Pass",
		"forward rule N: Allow", "forward rule N: Deny", "forward rule N: Pass", "forward default action Pass",
		"forward end of tier drop", "forward no applyOnForward policy", "forward passed out of the last tier"} {
		if classes[want] == 0 {
			t.Errorf("no packet decided by %q", want)
		}
	}
	for _, want := range []string{"GlobalNetworkPolicy", "NetworkPolicy", "profile"} {
		if kinds[want] == 0 {
			t.Errorf("no packet decided by a %s", want)
		}
	}
	if frac := float64(delivered) / float64(packets); frac < 0.2 || frac > 0.8 {
		t.Errorf("%.0f%% of the packets are delivered: the generator is unbalanced", 100*frac)
	}
}
