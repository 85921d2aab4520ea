package calicoctl

import (
	"fmt"
	"sort"
	"strings"
)

// group is a command made of subcommands ("ipam check", "node status").
type group struct {
	name string
	subs map[string]*command
}

var groups = map[string]*group{}

// registerSub adds a subcommand to a command group, creating the group (and its top-level
// command) on first use. A file adding, say, `node status` only needs
//
//	func init() { registerSub("node", "Calico node management.", &command{name: "status", ...}) }
func registerSub(groupName, groupSummary string, sub *command) {
	g, ok := groups[groupName]
	if !ok {
		g = &group{name: groupName, subs: map[string]*command{}}
		groups[groupName] = g
		register(&command{name: groupName, summary: groupSummary, run: g.run})
	}
	if _, dup := g.subs[sub.name]; dup {
		panic("calicoctl: subcommand registered twice: " + groupName + " " + sub.name)
	}
	g.subs[sub.name] = sub
}

func (g *group) run(c *cli, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(c.stdout, g.usage())
		if len(args) == 0 {
			return failf("Invalid option: 'calicoctl %s'. Use flag '--help' to read about a specific subcommand.", g.name)
		}
		return errHelp
	}
	sub, ok := g.subs[args[0]]
	if !ok {
		return failf("Invalid option: 'calicoctl %s %s'. Use flag '--help' to read about a specific subcommand.", g.name, strings.Join(args, " "))
	}
	return sub.run(c, args[1:])
}

func (g *group) usage() string {
	names := make([]string, 0, len(g.subs))
	for n := range g.subs {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "Usage:\n  calicoctl %s <command> [<args>...]\n\n", g.name)
	for _, n := range names {
		fmt.Fprintf(&b, "    %-12s %s\n", n, g.subs[n].summary)
	}
	fmt.Fprintf(&b, "\nOptions:\n  -h --help      Show this screen.\n\nSee 'calicoctl %s <command> --help' to read about a specific subcommand.\n", g.name)
	return b.String()
}
