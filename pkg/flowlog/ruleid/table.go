package ruleid

import "fmt"

// Table maps the prefixes of one ruleset back to their rules. The
// dataplane fills one while it renders a ruleset (Add for every NFLOG
// statement it writes) and hands it to the collector with the ruleset;
// from then on it is only read, from any goroutine.
type Table struct {
	byPrefix map[string]RuleID
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{byPrefix: map[string]RuleID{}} }

// Add records a rule and returns its prefix. Two different rules with one
// prefix (a policy whose tier changed within one ruleset, or a hash
// collision) are refused: the caller renders the second without its
// prefix rather than let the collector blame the wrong rule.
func (t *Table) Add(r RuleID) (string, error) {
	p := r.Prefix()
	if have, ok := t.byPrefix[p]; ok && have != r {
		return "", fmt.Errorf("prefix %q of %v is taken by %v", p, r, have)
	}
	t.byPrefix[p] = r
	return p, nil
}

// Lookup returns the rule of a prefix.
func (t *Table) Lookup(prefix string) (RuleID, bool) {
	r, ok := t.byPrefix[prefix]
	return r, ok
}

// Len returns the number of prefixes held.
func (t *Table) Len() int { return len(t.byPrefix) }
