package nft

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Dump renders the table as `nft -s list table` prints it, with sets,
// maps and chains each sorted by name, set elements sorted, and each rule
// in canonical form (as it reads back from the kernel). Element lists are
// on one line (nft wraps long ones). Dumps serve as golden files.
func (t *Table) Dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table %s %s {\n", t.Family, quoteName(t.Name))
	first := true
	sep := func() {
		if !first {
			b.WriteByte('\n')
		}
		first = false
	}
	for _, name := range t.SetNames() {
		sep()
		writeSet(&b, t.sets[name])
	}
	for _, name := range t.MapNames() {
		sep()
		writeMap(&b, t.maps[name])
	}
	for _, name := range t.ChainNames() {
		sep()
		t.writeChain(&b, t.chains[name])
	}
	b.WriteString("}\n")
	return b.String()
}

func writeSet(b *strings.Builder, s *Set) {
	fmt.Fprintf(b, "\tset %s {\n\t\ttype %s\n", quoteName(s.Name), s.Type)
	if s.Interval {
		b.WriteString("\t\tflags interval\n")
	}
	if len(s.Elements) > 0 {
		parts := make([]string, len(s.Elements))
		for i, e := range s.Elements {
			parts[i] = s.Type.formatElement(e)
		}
		fmt.Fprintf(b, "\t\telements = { %s }\n", strings.Join(parts, ", "))
	}
	b.WriteString("\t}\n")
}

func writeMap(b *strings.Builder, m *Map) {
	fmt.Fprintf(b, "\tmap %s {\n\t\ttype %s : verdict\n", quoteName(m.Name), m.Type)
	if len(m.Elements) > 0 {
		elems := m.SortedElements()
		parts := make([]string, len(elems))
		for i, e := range elems {
			parts[i] = m.Type.format([]byte(e.Key.raw)) + " : " + e.Verdict.String()
		}
		fmt.Fprintf(b, "\t\telements = { %s }\n", strings.Join(parts, ", "))
	}
	b.WriteString("\t}\n")
}

func (t *Table) writeChain(b *strings.Builder, c *Chain) {
	fmt.Fprintf(b, "\tchain %s {\n", quoteName(c.Name))
	if c.Base != nil {
		fmt.Fprintf(b, "\t\t%s\n", c.Base.Text(t.Family))
	}
	for _, r := range c.Rules {
		if cr, err := Canonical(t.Family, r); err == nil {
			r = cr
		}
		fmt.Fprintf(b, "\t\t%s\n", r.Text(t.Family))
	}
	b.WriteString("\t}\n")
}

// Text renders the base chain declaration line as nft prints it in a table
// of family f.
func (bc *BaseChain) Text(f Family) string {
	dev := ""
	if bc.Device != "" {
		dev = " device " + strconv.Quote(bc.Device)
	}
	return fmt.Sprintf("type %s hook %s%s priority %s; policy %s;", bc.Type, bc.Hook, dev, priorityText(f, bc), bc.EffectivePolicy())
}

type namedPriority struct {
	name  string
	value int32
	hook  Hook // "" for any hook
}

var (
	ipPriorities = []namedPriority{
		{"raw", PriorityRaw, ""}, {"mangle", PriorityMangle, ""}, {"dstnat", PriorityDstNAT, HookPrerouting},
		{"filter", PriorityFilter, ""}, {"security", PrioritySecurity, ""}, {"srcnat", PrioritySrcNAT, HookPostrouting},
	}
	bridgePriorities = []namedPriority{
		{"dstnat", -300, HookPrerouting}, {"filter", -200, ""}, {"out", 100, HookOutput}, {"srcnat", 300, HookPostrouting},
	}
	plainPriorities = []namedPriority{{"filter", PriorityFilter, ""}}
)

// priorityText names a priority as nft does: a standard name, optionally
// with an offset of up to 10, or a bare number.
func priorityText(f Family, bc *BaseChain) string {
	names := ipPriorities
	switch f {
	case FamilyBridge:
		names = bridgePriorities
	case FamilyARP, FamilyNetdev:
		names = plainPriorities
	}
	for _, p := range names {
		off := bc.Priority - p.value
		switch {
		case (p.hook != "" && p.hook != bc.Hook) || off < -10 || off > 10:
			continue
		case off == 0:
			return p.name
		case off > 0:
			return fmt.Sprintf("%s + %d", p.name, off)
		default:
			return fmt.Sprintf("%s - %d", p.name, -off)
		}
	}
	return strconv.Itoa(int(bc.Priority))
}

// Dump renders several tables, sorted by family and name.
func Dump(tables ...*Table) string {
	sorted := slices.Clone(tables)
	slices.SortFunc(sorted, func(a, b *Table) int {
		if c := strings.Compare(a.Family.String(), b.Family.String()); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	var b strings.Builder
	for _, t := range sorted {
		b.WriteString(t.Dump())
	}
	return b.String()
}
