package calicoctl

import (
	"bytes"
	"context"
	"os"
	"sort"
	"strings"
	"testing"
)

// ourCommand is one of calico-host's commands as the documentation describes it.
type ourCommand struct {
	path    string
	summary string
	refused string
	group   bool
	options map[string]bool // "--name" and "-n" spellings the command accepts
}

// ourCommands lists every registered command by path, with the options each one defines (found
// by running it with --help and recording what it parses).
func ourCommands(t *testing.T) map[string]*ourCommand {
	t.Helper()
	out := map[string]*ourCommand{}
	var visit func(path string, cmd *command)
	visit = func(path string, cmd *command) {
		oc := &ourCommand{path: path, summary: cmd.summary, refused: cmd.refused, options: map[string]bool{}}
		out[path] = oc
		if g, ok := groups[path]; ok {
			oc.group = true
			for name, sub := range g.subs {
				visit(path+" "+name, sub)
			}
			return
		}
		var stdout, stderr bytes.Buffer
		c := &cli{ctx: context.Background(), stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, env: noEnv,
			flagsDefined: func(_ string, names []string) {
				for _, n := range names {
					oc.options[n] = true
				}
			}}
		if err := cmd.run(c, []string{"--help"}); err != errHelp {
			t.Errorf("calicoctl %s --help: %v", path, err)
		}
	}
	for name, cmd := range commands {
		visit(name, cmd)
	}
	return out
}

// calicoList is the committed list of Project Calico's commands.
type calicoList struct {
	commit   string
	commands []*calicoCommand // sorted by path; commands[0] is the root ("")
	byPath   map[string]*calicoCommand
}

func readCalicoList(t *testing.T) *calicoList {
	t.Helper()
	data, err := os.ReadFile(calicoListFile)
	if err != nil {
		t.Fatal(err)
	}
	l := &calicoList{byPath: map[string]*calicoCommand{}}
	for _, line := range strings.Split(string(data), "\n") {
		if c, ok := strings.CutPrefix(line, "# calicoctl/calicoctl/commands of projectcalico/calico "); ok {
			l.commit = strings.Fields(c)[0]
		}
		f := strings.Split(line, "\t")
		switch f[0] {
		case "command":
			c := &calicoCommand{path: f[1], use: f[2], short: f[3]}
			l.commands = append(l.commands, c)
			l.byPath[c.path] = c
		case "option":
			c := l.byPath[f[1]]
			o := calicoOption{name: strings.TrimPrefix(f[2], "--"), short: strings.TrimPrefix(f[3], "-"), typ: f[4], hidden: len(f) > 5 && f[5] == "hidden"}
			c.options = append(c.options, o)
		}
	}
	sort.Slice(l.commands, func(i, j int) bool { return l.commands[i].path < l.commands[j].path })
	return l
}
