package nft

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// identRE is what nft accepts as an unquoted name.
var identRE = regexp.MustCompile(`^[a-zA-Z_.][a-zA-Z0-9_./-]*$`)

// quoteName prints a table, chain, set or map name as nft syntax.
func quoteName(s string) string {
	if identRE.MatchString(s) {
		return s
	}
	return strconv.Quote(s)
}

// String renders the rule as nft prints it, with its comment (but without
// the identity hash the Applier adds to the kernel's copy).
func (r Rule) String() string {
	var b strings.Builder
	for i, x := range r.Exprs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(x.String())
	}
	if c := r.comment(); c != "" {
		b.WriteString(" comment ")
		b.WriteString(strconv.Quote(c))
	}
	return b.String()
}

// maxComment is the longest user comment kept; longer ones are cut.
const maxComment = 128

// comment returns the rule comment made safe for nft syntax and the
// kernel's userdata: printable ASCII other than `"` and `\`, at most
// maxComment bytes.
func (r Rule) comment() string {
	if r.Comment == "" {
		return ""
	}
	b := []byte(r.Comment)
	if len(b) > maxComment {
		b = b[:maxComment]
	}
	for i, c := range b {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			b[i] = '_'
		}
	}
	return string(b)
}

// String renders the base chain declaration line as nft prints it.
func (b *BaseChain) String() string {
	return fmt.Sprintf("type %s hook %s priority %s; policy %s;", b.Type, b.Hook, priorityText(b), b.policy())
}

// priorityText names a priority as nft does: a standard name, optionally
// with an offset of up to 10, or a bare number.
func priorityText(b *BaseChain) string {
	for _, p := range []struct {
		name  string
		value int
		ok    bool
	}{
		{"raw", PriorityRaw, true},
		{"mangle", PriorityMangle, true},
		{"dstnat", PriorityDstNAT, b.Hook == HookPrerouting}, // nft names it only there
		{"filter", PriorityFilter, true},
		{"security", PrioritySecurity, true},
		{"srcnat", PrioritySrcNAT, b.Hook == HookPostrouting},
	} {
		off := b.Priority - p.value
		switch {
		case !p.ok || off < -10 || off > 10:
			continue
		case off == 0:
			return p.name
		case off > 0:
			return fmt.Sprintf("%s + %d", p.name, off)
		default:
			return fmt.Sprintf("%s - %d", p.name, -off)
		}
	}
	return strconv.Itoa(b.Priority)
}

// chainText renders a chain block; hashes, when given, go into the rule
// comments as the kernel holds them.
func chainText(b *strings.Builder, name string, base *BaseChain, rules []string) {
	fmt.Fprintf(b, "\tchain %s {\n", quoteName(name))
	if base != nil {
		fmt.Fprintf(b, "\t\t%s\n", base)
	}
	for _, r := range rules {
		fmt.Fprintf(b, "\t\t%s\n", r)
	}
	b.WriteString("\t}\n")
}

// setText renders a set block with its (sorted) elements.
func setText(b *strings.Builder, name, typ string, interval bool, elems []string) {
	fmt.Fprintf(b, "\tset %s {\n\t\ttype %s\n", quoteName(name), typ)
	if interval {
		b.WriteString("\t\tflags interval\n")
	}
	if len(elems) > 0 {
		fmt.Fprintf(b, "\t\telements = { %s }\n", strings.Join(sortedCopy(elems), ", "))
	}
	b.WriteString("\t}\n")
}

// mapText renders a verdict map block with its (sorted) elements.
func mapText(b *strings.Builder, name, keyType string, elems map[string]Verdict) {
	fmt.Fprintf(b, "\tmap %s {\n\t\ttype %s : verdict\n", quoteName(name), keyType)
	if len(elems) > 0 {
		fmt.Fprintf(b, "\t\telements = { %s }\n", strings.Join(mapElementTexts(elems), ", "))
	}
	b.WriteString("\t}\n")
}

func mapElementTexts(elems map[string]Verdict) []string {
	out := make([]string, 0, len(elems))
	for k, v := range elems {
		out = append(out, k+" : "+v.String())
	}
	slices.Sort(out)
	return out
}

// sortedCopy returns s sorted, in a slice of its own.
func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	if !slices.IsSorted(out) {
		slices.Sort(out)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
