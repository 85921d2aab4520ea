package ruleid

import (
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/flowlog"
)

// fuzzID builds a rule ID of one of the five forms from arbitrary input;
// the constructors refuse what is not valid.
func fuzzID(form, kind uint8, tier, ns, name string, egress bool, index int, action uint8) (RuleID, error) {
	dir := Ingress
	if egress {
		dir = Egress
	}
	p := Policy{Kind: flowlog.PolicyKind(kind % 12), Namespace: ns, Name: name}
	a := flowlog.Action(action % 4)
	switch form % 5 {
	case 0:
		return Rule(p, tier, dir, index, a)
	case 1:
		return ProfileRule(name, dir, index, a)
	case 2:
		return EndOfTier(tier, dir, a)
	case 3:
		return StagedNoMatch(p, tier, dir)
	}
	return NoProfileMatch(dir)
}

// FuzzRuleIDRoundTrip: every valid rule ID has a prefix of at most 63 safe bytes that
// parses back to the ID's action, owner, direction, index and name (or, hashed, to its
// letters), and that a table maps back to the ID. Two IDs that differ in more than the
// tier (which the prefix does not carry) have different prefixes.
func FuzzRuleIDRoundTrip(f *testing.F) {
	f.Add(uint8(0), uint8(2), "default", "", "allow-web", false, 0, uint8(1))
	f.Add(uint8(0), uint8(1), "security", "prod", "db", true, 12, uint8(2))
	f.Add(uint8(1), uint8(9), "", "", "openstack-sg-a1", true, 3, uint8(3))
	f.Add(uint8(2), uint8(0), "security", "", "", false, 0, uint8(3))
	f.Add(uint8(3), uint8(3), "default", "prod", "staged", false, 0, uint8(0))
	f.Add(uint8(4), uint8(0), "", "", "", true, 0, uint8(0))
	f.Add(uint8(0), uint8(1), "t", strings.Repeat("n", 40), strings.Repeat("p", 40), false, 99999, uint8(1))
	f.Fuzz(func(t *testing.T, form, kind uint8, tier, ns, name string, egress bool, index int, action uint8) {
		id, err := fuzzID(form, kind, tier, ns, name, egress, index, action)
		if err != nil {
			return
		}
		prefix := id.Prefix()
		if len(prefix) > MaxPrefixLen || strings.ContainsFunc(prefix, notPrefixChar) {
			t.Fatalf("%v: prefix %q too long or unsafe", id, prefix)
		}
		p, err := ParsePrefix(prefix)
		if err != nil {
			t.Fatalf("%v: ParsePrefix(%q): %v", id, prefix, err)
		}
		checkParsed(t, id, p)
		tb := NewTable()
		if _, err := tb.Add(id); err != nil {
			t.Fatal(err)
		}
		if got, ok := tb.Lookup(prefix); !ok || got != id {
			t.Fatalf("table: %q -> %v, %v; want %v", prefix, got, ok, id)
		}
		other, err := fuzzID(form, kind, tier, ns, name, !egress, index, action)
		if err == nil && other.Prefix() == prefix {
			t.Fatalf("%v and %v share prefix %q", id, other, prefix)
		}
		if h, err := id.Hit(0, Policy{Kind: flowlog.KindGlobalNetworkPolicy, Name: "trigger"}); err != nil {
			t.Fatalf("%v: no hit: %v", id, err)
		} else if h.Action != id.Action {
			t.Fatalf("%v: hit %v", id, h)
		}
	})
}

func checkParsed(t *testing.T, id RuleID, p Parsed) {
	t.Helper()
	owner := OwnerPolicy
	if id.Kind == flowlog.KindProfile {
		owner = OwnerProfile
	}
	if p.Action != id.Action || p.Direction != id.Direction || p.Owner != owner {
		t.Fatalf("%v: parsed %+v", id, p)
	}
	if p.Hashed {
		return
	}
	name, index := id.Policy().ID(), id.Index
	switch {
	case id.Kind == flowlog.KindEndOfTier:
		name = id.Tier
	case id.Kind == flowlog.KindProfile && id.Name == NoMatchProfile:
		name, index = "", -1
	}
	if p.Name != name || p.Index != index {
		t.Fatalf("%v: parsed name %q index %d, want %q %d", id, p.Name, p.Index, name, index)
	}
}

// FuzzParsePrefix: whatever the kernel hands back, parsing never panics, and a prefix that
// parses is safe and, unless hashed, prints back the same.
func FuzzParsePrefix(f *testing.F) {
	for _, s := range []string{"API0|gnp/a", "DPE12|np/prod/db", "DRI", "PPE|security", "DPE|sgnp/x", "ARE2|sg",
		"API7|np/a-_684sOT9yWP3qWiuTpZsm9uM8fG4nims8TK-peTv70_y-name-too"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePrefix(s)
		if err != nil {
			return
		}
		if len(s) > MaxPrefixLen || strings.ContainsFunc(s, notPrefixChar) {
			t.Fatalf("accepted unsafe %q", s)
		}
		if !p.Hashed && p.String() != s {
			t.Fatalf("%q parsed to %+v, prints %q", s, p, p.String())
		}
	})
}
