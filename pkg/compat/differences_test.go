package compat_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// difference is one entry of differences.toml.
type difference struct {
	Component string `toml:"component"`
	What      string `toml:"what"`
	Why       string `toml:"why"`
}

// writeDifferences appends the section listing differences.toml.
func writeDifferences(t *testing.T, b *strings.Builder) {
	var list struct {
		Difference []difference `toml:"difference"`
	}
	md, err := toml.DecodeFile("differences.toml", &list)
	if err != nil {
		t.Fatal(err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		t.Fatalf("differences.toml: unknown keys %v", u)
	}
	b.WriteString("\n## Behaviour that differs from Project Calico's\n\n")
	b.WriteString("On the same datastore contents, calico-host behaves as Project Calico does but for these\n")
	b.WriteString("(pkg/compat/differences.toml).\n\n")
	b.WriteString("| Component | What differs | Why |\n|---|---|---|\n")
	for _, d := range list.Difference {
		if d.Component == "" || d.What == "" || d.Why == "" {
			t.Fatalf("differences.toml: incomplete entry %+v", d)
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", d.Component, strings.ReplaceAll(d.What, "|", `\|`), strings.ReplaceAll(d.Why, "|", `\|`))
	}
}
