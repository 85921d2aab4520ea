package ruleid

import (
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/flowlog"
)

func gnp(name string) Policy { return Policy{Kind: flowlog.KindGlobalNetworkPolicy, Name: name} }

// ok returns a function that unwraps a constructor's result, failing t on error.
func ok(t testing.TB) func(RuleID, error) RuleID {
	return func(r RuleID, err error) RuleID {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// The prefixes are felix's (felix/rules/nflogprefix.go): AODIII|id for rules, AOD|tier for
// ends of tiers, DRD for "no profile matched", DPD|id for a staged policy's no-match.
func TestPrefixFormats(t *testing.T) {
	np := Policy{Kind: flowlog.KindCalicoNetworkPolicy, Namespace: "prod", Name: "db"}
	sgnp := Policy{Kind: flowlog.KindStagedGlobalNetworkPolicy, Name: "lockdown"}
	cases := []struct {
		id   func() (RuleID, error)
		want string
	}{
		{func() (RuleID, error) { return Rule(gnp("allow-web"), "default", Ingress, 0, flowlog.Allow) }, "API0|gnp/allow-web"},
		{func() (RuleID, error) { return Rule(np, "security", Egress, 12, flowlog.Deny) }, "DPE12|np/prod/db"},
		{func() (RuleID, error) { return Rule(gnp("to-next"), "security", Ingress, 3, flowlog.Pass) }, "PPI3|gnp/to-next"},
		{func() (RuleID, error) { return Rule(sgnp, "default", Ingress, 1, flowlog.Deny) }, "DPI1|sgnp/lockdown"},
		{func() (RuleID, error) { return ProfileRule("openstack-sg-a1", Egress, 2, flowlog.Allow) }, "ARE2|openstack-sg-a1"},
		{func() (RuleID, error) { return EndOfTier("security", Ingress, flowlog.Deny) }, "DPI|security"},
		{func() (RuleID, error) { return EndOfTier("security", Egress, flowlog.Pass) }, "PPE|security"},
		{func() (RuleID, error) { return NoProfileMatch(Ingress) }, "DRI"},
		{func() (RuleID, error) { return StagedNoMatch(sgnp, "default", Egress) }, "DPE|sgnp/lockdown"},
	}
	for _, c := range cases {
		id := ok(t)(c.id())
		if got := id.Prefix(); got != c.want {
			t.Errorf("%v: prefix %q, want %q", id, got, c.want)
		}
		p, err := ParsePrefix(c.want)
		if err != nil || p.Hashed || p.String() != c.want {
			t.Errorf("ParsePrefix(%q) = %+v, %v", c.want, p, err)
		}
	}
}

// A prefix of 63 bytes or more is hashed as felix hashes it: the first and last 10
// characters around "_", 41 characters of the URL-safe base64 SHA-256 of the whole, "_".
// (The value below was computed independently with Python's hashlib from felix's algorithm.)
func TestPrefixHashed(t *testing.T) {
	p := Policy{Kind: flowlog.KindCalicoNetworkPolicy, Namespace: "a-rather-long-namespace-name", Name: "and-a-rather-long-policy-name-too"}
	id := ok(t)(Rule(p, "default", Ingress, 7, flowlog.Allow))
	const want = "API7|np/a-_684sOT9yWP3qWiuTpZsm9uM8fG4nims8TK-peTv70_y-name-too"
	got := id.Prefix()
	if len(got) != MaxPrefixLen || got != want {
		t.Errorf("prefix %q (%d bytes), want %q", got, len(got), want)
	}
	parsed, err := ParsePrefix(got)
	if err != nil || !parsed.Hashed || parsed.Action != flowlog.Allow || parsed.Owner != OwnerPolicy || parsed.Direction != Ingress {
		t.Errorf("ParsePrefix(%q) = %+v, %v", got, parsed, err)
	}
	// 62 bytes stay as they are; 63 are hashed.
	name62 := strings.Repeat("x", 62-len("API0|gnp/"))
	if got := ok(t)(Rule(gnp(name62), "t", Ingress, 0, flowlog.Allow)).Prefix(); len(got) != 62 || strings.Contains(got, "_") {
		t.Errorf("62-byte prefix changed: %q", got)
	}
	if got := ok(t)(Rule(gnp(name62+"y"), "t", Ingress, 0, flowlog.Allow)).Prefix(); len(got) != 63 || got[10] != '_' {
		t.Errorf("63-byte prefix not hashed: %q", got)
	}
}

func TestConstructorsRefuse(t *testing.T) {
	bad := map[string]func() (RuleID, error){
		"namespaced without namespace": func() (RuleID, error) {
			return Rule(Policy{Kind: flowlog.KindCalicoNetworkPolicy, Name: "x"}, "default", Ingress, 0, flowlog.Allow)
		},
		"global with namespace": func() (RuleID, error) {
			return Rule(Policy{Kind: flowlog.KindGlobalNetworkPolicy, Namespace: "n", Name: "x"}, "default", Ingress, 0, flowlog.Allow)
		},
		"quote in name":  func() (RuleID, error) { return Rule(gnp(`a"b`), "default", Ingress, 0, flowlog.Allow) },
		"bar in tier":    func() (RuleID, error) { return Rule(gnp("a"), "de|fault", Ingress, 0, flowlog.Allow) },
		"slash in name":  func() (RuleID, error) { return Rule(gnp("a/b"), "default", Ingress, 0, flowlog.Allow) },
		"no tier":        func() (RuleID, error) { return Rule(gnp("a"), "", Ingress, 0, flowlog.Allow) },
		"negative index": func() (RuleID, error) { return Rule(gnp("a"), "default", Ingress, -1, flowlog.Allow) },
		"bad direction":  func() (RuleID, error) { return Rule(gnp("a"), "default", 'X', 0, flowlog.Allow) },
		"no action":      func() (RuleID, error) { return Rule(gnp("a"), "default", Ingress, 0, 0) },
		"profile as policy": func() (RuleID, error) {
			return Rule(Policy{Kind: flowlog.KindProfile, Name: "p"}, "t", Ingress, 0, flowlog.Allow)
		},
		"end of tier allow":   func() (RuleID, error) { return EndOfTier("default", Ingress, flowlog.Allow) },
		"no-match not staged": func() (RuleID, error) { return StagedNoMatch(gnp("a"), "default", Ingress) },
		"long name": func() (RuleID, error) {
			return ProfileRule(strings.Repeat("a", maxNameLen+1), Ingress, 0, flowlog.Allow)
		},
	}
	for name, f := range bad {
		if r, err := f(); err == nil {
			t.Errorf("%s: accepted %v", name, r)
		}
	}
}

func TestParsePrefixRefuses(t *testing.T) {
	for _, s := range []string{
		"", "AP", "XPI0|gnp/a", "AXI0|gnp/a", "APX0|gnp/a", "API0gnp/a", "API|gnp/a", "API00|gnp/a",
		"API0|zz/a", "API0|np/a", "API0|gnp/ns/a", "API0|tier", "DRI|x", "ARI", "PPI|sgnp/a", "DPI|gnp/a",
		"API0|gnp/a b", "API-1|gnp/a", strings.Repeat("A", 64), "API0|" + strings.Repeat("a", 58),
	} {
		if p, err := ParsePrefix(s); err == nil {
			t.Errorf("ParsePrefix(%q) accepted: %+v", s, p)
		}
	}
}

func TestTable(t *testing.T) {
	tb := NewTable()
	allow := ok(t)(Rule(gnp("web"), "default", Ingress, 0, flowlog.Allow))
	moved := ok(t)(Rule(gnp("web"), "security", Ingress, 0, flowlog.Allow))
	p, err := tb.Add(allow)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Add(allow); err != nil {
		t.Errorf("adding the same rule again: %v", err)
	}
	if _, err := tb.Add(moved); err == nil {
		t.Error("a second rule with the same prefix was accepted")
	}
	if got, ok := tb.Lookup(p); !ok || got != allow {
		t.Errorf("Lookup(%q) = %v, %v", p, got, ok)
	}
	if _, ok := tb.Lookup("API1|gnp/web"); ok || tb.Len() != 1 {
		t.Errorf("unknown prefix found, or %d entries", tb.Len())
	}
}

func TestHit(t *testing.T) {
	eot := ok(t)(EndOfTier("security", Ingress, flowlog.Deny))
	h, err := eot.Hit(1, Policy{Kind: flowlog.KindCalicoNetworkPolicy, Namespace: "prod", Name: "db"})
	if err != nil || h.String() != "1|security|np:prod/db|deny|-1" {
		t.Errorf("end of tier hit %v, %v", h, err)
	}
	if _, err := eot.Hit(1, Policy{}); err == nil {
		t.Error("end of tier without trigger accepted")
	}
	staged := ok(t)(StagedNoMatch(Policy{Kind: flowlog.KindStagedNetworkPolicy, Namespace: "prod", Name: "s"}, "default", Egress))
	if h, err := staged.Hit(0, Policy{}); err != nil || h.Kind != flowlog.KindEndOfTier || h.String() != "0|default|snp:prod/s|deny|-1" {
		t.Errorf("staged no-match hit %v, %v", h, err)
	}
	nomatch := ok(t)(NoProfileMatch(Egress))
	if h, err := nomatch.Hit(2, Policy{}); err != nil || h.String() != "2|__PROFILE__|pro:__NO_MATCH__|deny|0" {
		t.Errorf("no profile match hit %v, %v", h, err)
	}
	if !staged.Pending() || eot.Pending() {
		t.Error("Pending wrong")
	}
	if Ingress.Group() != 1 || Egress.Group() != 2 || Ingress.Reporter() != flowlog.Dst || Egress.Reporter() != flowlog.Src {
		t.Error("groups or reporters wrong")
	}
}
