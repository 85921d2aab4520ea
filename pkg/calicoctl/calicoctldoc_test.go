package calicoctl

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

var updateDoc = flag.Bool("update", false, "rewrite docs/calicoctl.md")

const docFile = "../../docs/calicoctl.md"

// TestCalicoctlDoc generates docs/calicoctl.md from Project Calico's command list
// (testdata/calico-commands.txt), calico-host's command table (every registered command and the
// options it parses) and the notes, and fails when the committed file differs (-update rewrites
// it) or when the table and the list disagree in a way no note explains.
func TestCalicoctlDoc(t *testing.T) {
	l := readCalicoList(t)
	ours := ourCommands(t)
	doc, problems := generateDoc(l, ours)
	for _, p := range problems {
		t.Error(p)
	}
	if *updateDoc {
		if err := os.WriteFile(docFile, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	committed, err := os.ReadFile(docFile)
	if err != nil || string(committed) != doc {
		t.Errorf("%s is out of date: run go test ./pkg/calicoctl -run TestCalicoctlDoc -update", docFile)
	}
}

// optionRow is one option of a command as documented.
type optionRow struct {
	spelling string // "-f, --filename"
	typ      string
	note     note
}

// docCommand is one command as documented.
type docCommand struct {
	path, use, calicoSummary string
	status, text             string
	options                  []optionRow
}

func generateDoc(l *calicoList, ours map[string]*ourCommand) (string, []string) {
	var problems []string
	usedNotes := map[string]bool{}
	var docs []docCommand
	for _, c := range l.commands {
		if c.path == "" {
			continue
		}
		oc := ours[c.path]
		if oc == nil {
			problems = append(problems, fmt.Sprintf("Project Calico's command %q is not registered (register it, or a refusal)", c.path))
			continue
		}
		dc, p := documentCommand(c, oc, l.byPath[""].options, usedNotes)
		docs = append(docs, dc)
		problems = append(problems, p...)
	}
	for _, path := range sortedKeys(ours) {
		if _, ok := l.byPath[path]; ok {
			continue
		}
		own, ok := ownCommands[path]
		if !ok {
			problems = append(problems, fmt.Sprintf("calico-host's command %q is not Project Calico's: document it (ownCommands)", path))
			continue
		}
		docs = append(docs, documentOwnCommand(path, own, ours[path], l.byPath[""].options))
	}
	for path := range ownCommands {
		if _, ok := ours[path]; !ok {
			problems = append(problems, fmt.Sprintf("ownCommands documents %q, which is not registered", path))
		}
	}
	for k := range optionNotes {
		if !usedNotes[k] && !strings.HasPrefix(k, globalPath+" ") {
			problems = append(problems, fmt.Sprintf("note %q is about no option of the command", k))
		}
	}
	for k := range commandNotes {
		if _, ok := l.byPath[k]; !ok {
			problems = append(problems, fmt.Sprintf("note about command %q, which Project Calico does not have", k))
		}
	}
	return renderDoc(l, docs), problems
}

// documentCommand describes one command and checks its options against Project Calico's.
func documentCommand(c *calicoCommand, oc *ourCommand, globals []calicoOption, used map[string]bool) (docCommand, []string) {
	dc := docCommand{path: c.path, use: c.use, calicoSummary: c.short, status: "supported", text: commandNotes[c.path]}
	if oc.group && dc.text == "" {
		dc.text = "A group of the commands below."
	}
	if oc.refused != "" {
		dc.status, dc.text = "refused", "calicoctl says: "+oc.refused+"."
	}
	var problems []string
	calicoNames := map[string]bool{}
	opts := append([]calicoOption(nil), c.options...)
	sort.Slice(opts, func(i, j int) bool { return opts[i].name < opts[j].name })
	for _, o := range opts {
		calicoNames["--"+o.name], calicoNames["-"+o.short] = true, true
		key := c.path + " --" + o.name
		n, hasNote := optionNotes[key]
		used[key] = hasNote
		defined := oc.options["--"+o.name] && (o.short == "" || oc.options["-"+o.short])
		switch {
		case !defined && (!hasNote || n.status != notAccepted):
			problems = append(problems, fmt.Sprintf("calicoctl %s does not accept Project Calico's option %s (define it, or note it as not accepted)", c.path, spelling(o)))
		case defined && hasNote && n.status == notAccepted:
			problems = append(problems, fmt.Sprintf("note %q says not accepted, but calicoctl %s defines it", key, c.path))
		case !hasNote && oc.refused != "":
			n = note{refusedOpt, "Accepted; the command is refused."}
		}
		dc.options = append(dc.options, optionRow{spelling: spelling(o), typ: o.typ, note: n})
	}
	if !oc.group {
		for _, g := range globals {
			calicoNames["--"+g.name], calicoNames["-"+g.short] = true, true
			if !oc.options["--"+g.name] {
				problems = append(problems, fmt.Sprintf("calicoctl %s does not accept the global option --%s", c.path, g.name))
			}
		}
	}
	for _, name := range sortedKeys(oc.options) {
		if calicoNames[name] || !strings.HasPrefix(name, "--") {
			continue
		}
		key := c.path + " " + name
		n, ok := optionNotes[key]
		used[key] = ok
		if !ok || n.status != ownOption {
			problems = append(problems, fmt.Sprintf("calicoctl %s has option %s, which Project Calico's has not: note it as calico-host only", c.path, name))
		}
		dc.options = append(dc.options, optionRow{spelling: name, note: n})
	}
	return dc, problems
}

// documentOwnCommand describes a command of calico-host's own: its options (but the global
// ones) are calico-host only.
func documentOwnCommand(path string, own ownCommand, oc *ourCommand, globals []calicoOption) docCommand {
	dc := docCommand{path: path, use: own.use, calicoSummary: strings.TrimSuffix(oc.summary, "."), status: "calico-host only", text: own.text}
	global := map[string]bool{"--help": true}
	for _, g := range globals {
		global["--"+g.name] = true
	}
	for _, name := range sortedKeys(oc.options) {
		if strings.HasPrefix(name, "--") && !global[name] {
			dc.options = append(dc.options, optionRow{spelling: name, note: note{status: ownOption}})
		}
	}
	return dc
}

func spelling(o calicoOption) string {
	if o.short != "" {
		return "-" + o.short + ", --" + o.name
	}
	return "--" + o.name
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func renderDoc(l *calicoList, docs []docCommand) string {
	var b strings.Builder
	b.WriteString("<!-- Generated by TestCalicoctlDoc (pkg/calicoctl/calicoctldoc_test.go); do not edit.\n")
	b.WriteString("     Regenerate: go test ./pkg/calicoctl -run TestCalicoctlDoc -update -->\n\n")
	b.WriteString("# calicoctl: Project Calico's commands and options in calico-host\n\n")
	fmt.Fprintf(&b, "Every command and option of Project Calico's calicoctl (projectcalico/calico %s, Linux\n", shortCommit(l.commit))
	b.WriteString("build, extracted from its source into pkg/calicoctl/testdata/calico-commands.txt), with what\n")
	b.WriteString("calico-host's calicoctl does with it. calico-host works with etcd only (datastoreType etcdv3).\n\n")
	b.WriteString("Statuses: **supported** (as Project Calico), **supported, extended** (as Project Calico, with\n")
	b.WriteString("the additions or differences noted), **partly supported** (some values are refused),\n")
	b.WriteString("**accepted, no effect**, **refused** (the command fails, saying why; nothing is written),\n")
	b.WriteString("**calico-host only**. Every option is accepted in the forms Project Calico accepts\n")
	b.WriteString("(`-c FILE`, `--config FILE`, `--config=FILE`), before, between or after the arguments.\n\n")
	b.WriteString("`-c, --config` takes calico-host's TOML datastore configuration (default\n")
	b.WriteString("/etc/calico/datastore.toml) or Project Calico's calicoctl.cfg (kind CalicoAPIConfig,\n")
	b.WriteString("datastoreType etcdv3); the ETCD_* environment variables apply on top of either.\n\n")
	writeDocSummary(&b, docs)
	writeGlobals(&b, l.byPath[""].options)
	for _, d := range docs {
		writeCommand(&b, d)
	}
	return b.String()
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func writeDocSummary(b *strings.Builder, docs []docCommand) {
	counts := map[string]int{}
	nOpts := map[string]int{}
	for _, d := range docs {
		counts[d.status]++
		for _, o := range d.options {
			nOpts[o.note.status.String()]++
		}
	}
	fmt.Fprintf(b, "%d commands: %d supported, %d refused, %d calico-host only. Options by status:", len(docs),
		counts["supported"], counts["refused"], counts["calico-host only"])
	for _, s := range sortedKeys(nOpts) {
		fmt.Fprintf(b, " %s %d;", s, nOpts[s])
	}
	b.WriteString("\n\n| Command | Status | Project Calico's summary |\n|---|---|---|\n")
	for _, d := range docs {
		fmt.Fprintf(b, "| [`%s`](#%s) | %s | %s |\n", d.path, anchor(d.path), d.status, escapeCell(d.calicoSummary))
	}
	b.WriteString("\n")
}

func writeGlobals(b *strings.Builder, globals []calicoOption) {
	b.WriteString("## Global options\n\nAccepted before the command and, as in Project Calico, after it.\n\n")
	b.WriteString("| Option | Type | Status | Notes |\n|---|---|---|---|\n")
	for _, g := range globals {
		n := optionNotes[globalPath+" --"+g.name]
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", spelling(g), g.typ, n.status, escapeCell(n.text))
	}
	b.WriteString("\n")
}

func writeCommand(b *strings.Builder, d docCommand) {
	fmt.Fprintf(b, "## %s\n\n`calicoctl %s`: %s.\n\n**%s**", d.path, usePath(d), d.calicoSummary, d.status)
	if d.text != "" {
		b.WriteString(": " + d.text)
	}
	b.WriteString("\n\n")
	if len(d.options) == 0 {
		return
	}
	b.WriteString("| Option | Type | Status | Notes |\n|---|---|---|---|\n")
	for _, o := range d.options {
		typ := o.typ
		if typ == "" {
			typ = "-"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", o.spelling, typ, o.note.status, escapeCell(o.note.text))
	}
	b.WriteString("\n")
}

// usePath is the command's usage line with its full path ("ipam split NUMBER").
func usePath(d docCommand) string {
	parent, _, nested := cutLastWord(d.path)
	if !nested {
		return d.use
	}
	return parent + " " + d.use
}

func anchor(path string) string { return strings.ReplaceAll(path, " ", "-") }

func escapeCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
