package calicoctl

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Project Calico's calicoctl commands and options are extracted from its source (cobra command
// definitions) into testdata/calico-commands.txt, the list docs/calicoctl.md is generated from.
// With Project Calico's repository at hand (CALICO_REPO, a bare git directory; default the
// mirror below) the test fails when the list no longer matches the source;
// -update-calico rewrites it.

var updateCalico = flag.Bool("update-calico", false, "rewrite testdata/calico-commands.txt from Project Calico's source")

const (
	defaultCalicoRepo = "/work/.mirror/projectcalico+calico/repo"
	calicoCommandsDir = "calicoctl/calicoctl/commands"
	calicoListFile    = "testdata/calico-commands.txt"
)

// calicoOption is one option of a Project Calico command.
type calicoOption struct {
	name, short, typ string
	hidden           bool
}

// calicoCommand is one Project Calico command, by path ("ipam split"; "" is the root).
type calicoCommand struct {
	path, use, short string
	options          []calicoOption
	children         []*calicoCommand
}

func TestCalicoCommandList(t *testing.T) {
	repo := os.Getenv("CALICO_REPO")
	if repo == "" {
		repo = defaultCalicoRepo
	}
	if _, err := os.Stat(repo); err != nil {
		t.Skipf("Project Calico's repository is not here (%s): the committed list is used as it is", repo)
	}
	commit := gitOut(t, repo, "rev-parse", "HEAD")
	root := extractCalicoCommands(t, repo)
	got := renderCalicoList(root, strings.TrimSpace(commit))
	if *updateCalico {
		if err := os.WriteFile(calicoListFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(calicoListFile)
	if err != nil {
		t.Fatal(err)
	}
	if body(string(want)) != body(got) {
		t.Errorf("%s is out of date with Project Calico's source; run go test ./pkg/calicoctl -run TestCalicoCommandList -update-calico, then -run TestCalicoctlDoc -update", calicoListFile)
	}
}

// body drops the comment lines (which name the commit).
func body(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func gitOut(t *testing.T, repo string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

// extractCalicoCommands parses the Linux build of Project Calico's commands package and
// returns its command tree.
func extractCalicoCommands(t *testing.T, repo string) *calicoCommand {
	t.Helper()
	x := &cobraExtractor{fset: token.NewFileSet(), funcs: map[string]*ast.FuncDecl{}, done: map[string]*calicoCommand{}}
	for _, f := range strings.Fields(gitOut(t, repo, "ls-tree", "--name-only", "HEAD", calicoCommandsDir+"/")) {
		if !strings.HasSuffix(f, ".go") || strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, "_darwin.go") || strings.HasSuffix(f, "_windows.go") {
			continue
		}
		file, err := parser.ParseFile(x.fset, f, gitOut(t, repo, "show", "HEAD:"+f), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				x.funcs[fd.Name.Name] = fd
			}
		}
	}
	root := x.command("NewCommand")
	if root == nil {
		t.Fatal("NewCommand not found in Project Calico's source")
	}
	setPaths(root, "")
	return root
}

// cobraExtractor follows cobra command constructors: commands built as &cobra.Command{Use: ...},
// options added with X.Flags()/X.PersistentFlags().<Type>[P](name, [short,] ...) directly or
// through helper functions taking the command, and subcommands added with X.AddCommand(...).
type cobraExtractor struct {
	fset  *token.FileSet
	funcs map[string]*ast.FuncDecl
	done  map[string]*calicoCommand
}

// command returns the command a constructor function returns.
func (x *cobraExtractor) command(fn string) *calicoCommand {
	if c, ok := x.done[fn]; ok {
		return c
	}
	fd := x.funcs[fn]
	if fd == nil {
		return nil
	}
	vars := map[string]*calicoCommand{}
	var result *calicoCommand
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if id, ok := n.Lhs[0].(*ast.Ident); ok && len(n.Rhs) == 1 {
				if c := newCobraCommand(n.Rhs[0]); c != nil {
					vars[id.Name] = c
				}
			}
		case *ast.ReturnStmt:
			if len(n.Results) == 1 {
				if c := newCobraCommand(n.Results[0]); c != nil {
					result = c
				} else if id, ok := n.Results[0].(*ast.Ident); ok {
					result = vars[id.Name]
				}
			}
		case *ast.CallExpr:
			x.call(n, vars)
		}
		return true
	})
	x.done[fn] = result
	return result
}

// call handles one call expression of a constructor.
func (x *cobraExtractor) call(n *ast.CallExpr, vars map[string]*calicoCommand) {
	if id, ok := n.Fun.(*ast.Ident); ok && len(n.Args) == 1 { // helper(cmd)
		if arg, ok := n.Args[0].(*ast.Ident); ok && vars[arg.Name] != nil {
			x.helper(id.Name, vars[arg.Name])
		}
		return
	}
	sel, ok := n.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	if recv, ok := sel.X.(*ast.Ident); ok && sel.Sel.Name == "AddCommand" && vars[recv.Name] != nil {
		for _, a := range n.Args {
			switch a := a.(type) {
			case *ast.CallExpr:
				if f, ok := a.Fun.(*ast.Ident); ok {
					if c := x.command(f.Name); c != nil {
						vars[recv.Name].children = append(vars[recv.Name].children, c)
					}
				}
			case *ast.Ident:
				if c := vars[a.Name]; c != nil {
					vars[recv.Name].children = append(vars[recv.Name].children, c)
				}
			}
		}
		return
	}
	inner, ok := sel.X.(*ast.CallExpr) // X.Flags().<Method>(...)
	if !ok {
		return
	}
	isel, ok := inner.Fun.(*ast.SelectorExpr)
	if !ok || (isel.Sel.Name != "Flags" && isel.Sel.Name != "PersistentFlags") {
		return
	}
	recv, ok := isel.X.(*ast.Ident)
	if !ok || vars[recv.Name] == nil {
		return
	}
	c := vars[recv.Name]
	if sel.Sel.Name == "MarkHidden" {
		name := stringArg(n, 0)
		for i := range c.options {
			if c.options[i].name == name {
				c.options[i].hidden = true
			}
		}
		return
	}
	if o, ok := optionFromCall(sel.Sel.Name, n); ok {
		c.options = append(c.options, o)
	}
}

// helper applies a function that adds options to the command it is given.
func (x *cobraExtractor) helper(fn string, c *calicoCommand) {
	fd := x.funcs[fn]
	if fd == nil || len(fd.Type.Params.List) != 1 || len(fd.Type.Params.List[0].Names) != 1 {
		return
	}
	vars := map[string]*calicoCommand{fd.Type.Params.List[0].Names[0].Name: c}
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			x.call(call, vars)
		}
		return true
	})
}

// optionFromCall reads name, shorthand and type from String("name", ...), StringP("name", "n", ...).
func optionFromCall(method string, n *ast.CallExpr) (calicoOption, bool) {
	typ, short := strings.CutSuffix(method, "P")
	switch typ {
	case "String", "Bool", "Int", "StringArray", "StringSlice", "Duration", "Float64", "Int64", "Uint":
	default:
		return calicoOption{}, false
	}
	o := calicoOption{name: stringArg(n, 0), typ: strings.ToLower(typ)}
	if short {
		o.short = stringArg(n, 1)
	}
	return o, o.name != ""
}

func stringArg(n *ast.CallExpr, i int) string {
	if i >= len(n.Args) {
		return ""
	}
	lit, ok := n.Args[i].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return s
}

// newCobraCommand reads &cobra.Command{Use: ..., Short: ...}.
func newCobraCommand(e ast.Expr) *calicoCommand {
	u, ok := e.(*ast.UnaryExpr)
	if !ok || u.Op != token.AND {
		return nil
	}
	cl, ok := u.X.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	if sel, ok := cl.Type.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Command" {
		return nil
	}
	c := &calicoCommand{}
	for _, elt := range cl.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, _ := kv.Key.(*ast.Ident)
		lit, ok := kv.Value.(*ast.BasicLit)
		if key == nil || !ok {
			continue
		}
		s, _ := strconv.Unquote(lit.Value)
		switch key.Name {
		case "Use":
			c.use = s
		case "Short":
			c.short = s
		}
	}
	return c
}

func setPaths(c *calicoCommand, parent string) {
	name := strings.Fields(c.use + " x")[0]
	switch {
	case parent == "" && name == "ctl":
		c.path = ""
	case parent == "":
		c.path = name
	default:
		c.path = parent + " " + name
	}
	for _, ch := range c.children {
		setPaths(ch, c.path)
	}
}

// renderCalicoList writes the tree as tab-separated lines, sorted by command path:
//
//	command <TAB> path <TAB> usage <TAB> summary
//	option  <TAB> path <TAB> --name <TAB> -s <TAB> type [<TAB> hidden]
//
// The root command's options (path "") are global: every command accepts them.
func renderCalicoList(root *calicoCommand, commit string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Project Calico's calicoctl commands and options (Linux build), extracted from\n")
	fmt.Fprintf(&b, "# %s of projectcalico/calico %s by TestCalicoCommandList.\n", calicoCommandsDir, commit)
	b.WriteString("# Regenerate: go test ./pkg/calicoctl -run TestCalicoCommandList -update-calico\n")
	var all []*calicoCommand
	var walk func(*calicoCommand)
	walk = func(c *calicoCommand) {
		all = append(all, c)
		for _, ch := range c.children {
			walk(ch)
		}
	}
	walk(root)
	sort.Slice(all, func(i, j int) bool { return all[i].path < all[j].path })
	for _, c := range all {
		fmt.Fprintf(&b, "command\t%s\t%s\t%s\n", c.path, c.use, c.short)
		opts := append([]calicoOption(nil), c.options...)
		sort.Slice(opts, func(i, j int) bool { return opts[i].name < opts[j].name })
		for _, o := range opts {
			short := ""
			if o.short != "" {
				short = "-" + o.short
			}
			hidden := ""
			if o.hidden {
				hidden = "\thidden"
			}
			fmt.Fprintf(&b, "option\t%s\t--%s\t%s\t%s%s\n", c.path, o.name, short, o.typ, hidden)
		}
	}
	return b.String()
}
