package calicoctl

import (
	"fmt"
	"sort"
	"strings"
)

// group is a command made of subcommands ("ipam check", "node status"); groups nest
// ("datastore migrate lock").
type group struct {
	path string // "ipam", "datastore migrate"
	subs map[string]*command
}

// groups holds every group by path.
var groups = map[string]*group{}

// registerSub adds a subcommand to a command group, creating the group (and its command) on
// first use. A file adding, say, `node status` only needs
//
//	func init() { registerSub("node", "Calico node management.", &command{name: "status", ...}) }
//
// A nested group ("datastore migrate") is created inside its parent group, which must exist.
func registerSub(groupPath, groupSummary string, sub *command) {
	g := ensureGroup(groupPath, groupSummary)
	if _, dup := g.subs[sub.name]; dup {
		panic("calicoctl: subcommand registered twice: " + groupPath + " " + sub.name)
	}
	g.subs[sub.name] = sub
}

func ensureGroup(path, summary string) *group {
	if g, ok := groups[path]; ok {
		return g
	}
	g := &group{path: path, subs: map[string]*command{}}
	groups[path] = g
	parent, name, nested := cutLastWord(path)
	cmd := &command{name: name, summary: summary, run: g.run}
	if !nested {
		register(cmd)
		return g
	}
	pg, ok := groups[parent]
	if !ok {
		panic("calicoctl: group " + path + " registered before its parent")
	}
	pg.subs[name] = cmd
	return g
}

// cutLastWord splits "a b c" into "a b" and "c"; nested is false for a single word.
func cutLastWord(path string) (parent, last string, nested bool) {
	i := strings.LastIndexByte(path, ' ')
	if i < 0 {
		return "", path, false
	}
	return path[:i], path[i+1:], true
}

func (g *group) run(c *cli, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(c.stdout, g.usage())
		if len(args) == 0 {
			return failf("Invalid option: 'calicoctl %s'. Use flag '--help' to read about a specific subcommand.", g.path)
		}
		return errHelp
	}
	sub, ok := g.subs[args[0]]
	if !ok {
		return failf("Invalid option: 'calicoctl %s %s'. Use flag '--help' to read about a specific subcommand.", g.path, strings.Join(args, " "))
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
	fmt.Fprintf(&b, "Usage:\n  calicoctl %s <command> [<args>...]\n\n", g.path)
	for _, n := range names {
		fmt.Fprintf(&b, "    %-12s %s\n", n, g.subs[n].summary)
	}
	fmt.Fprintf(&b, "\nOptions:\n  -h --help      Show this screen.\n\nSee 'calicoctl %s <command> --help' to read about a specific subcommand.\n", g.path)
	return b.String()
}
