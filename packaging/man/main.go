package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// binaryPage describes the manual page of a binary.
type binaryPage struct {
	name, section, summary string
	// help is the command line that prints the help (the binary's name first).
	help []string
	// env is extra environment for the help command.
	env []string
	// description is text written before the help output (paragraphs separated by blank lines).
	description string
	files       []string
	seeAlso     []string
	// subcommands are run as "<name> <sub> --help" and each shown in its own section.
	subcommands []string
}

// tomlPage describes the manual page of a configuration file.
type tomlPage struct {
	name, src, dst, summary string
	seeAlso                 []string
}

var binaries = []binaryPage{
	{name: "calico-startup", section: "8", summary: "register this host as a Calico node in etcd",
		help:        []string{"calico-startup", "-help"},
		description: "calico-startup registers this host as a Node in the Calico datastore (etcd), autodetects its addresses, creates the default IP pools and cluster configuration, writes /var/lib/calico/nodename, and keeps the Node's addresses and VXLAN tunnel address up to date. It runs as calico-startup.service.",
		files:       []string{"/etc/calico/node.toml", "/etc/calico/datastore.toml", "/etc/default/calico-startup", "/var/lib/calico/nodename"},
		seeAlso:     []string{"calico-node.toml(5)", "calico-datastore.toml(5)", "calico-felix(8)", "calico-confd(8)", "calicoctl(1)"}},
	{name: "calico-confd", section: "8", summary: "render BIRD's BGP configuration from the Calico datastore",
		help:        []string{"calico-confd", "-help"},
		description: "calico-confd renders BIRD 2 configuration from the BGP resources in etcd, checks it with bird -p, swaps it in atomically and reloads BIRD (calico-bird.service). It runs as calico-confd.service.",
		files:       []string{"/etc/calico/confd.toml", "/etc/calico/datastore.toml", "/etc/calico/confd/templates/", "/etc/calico/confd/config/bird.cfg", "/etc/default/calico-confd"},
		seeAlso:     []string{"calico-confd.toml(5)", "calico-datastore.toml(5)", "calico-startup(8)", "bird(8)"}},
	{name: "calico-felix", section: "8", summary: "Calico policy and routing agent for this host (nftables)",
		help:    []string{"calico-felix", "--help"},
		files:   []string{"/etc/calico/felix.toml", "/etc/calico/datastore.toml", "/etc/default/calico-felix", "/var/run/calico/endpoint-status/"},
		seeAlso: []string{"calico-felix.toml(5)", "calico-datastore.toml(5)", "calico-startup(8)", "calicoctl(1)", "nft(8)"}},
	{name: "calico", section: "8", summary: "Calico CNI plugin for container runtimes (etcd datastore)",
		help: []string{"calico"}, env: []string{"CNI_COMMAND=VERSION"},
		description: "calico is a CNI plugin, installed in /opt/cni/bin and run by container runtimes, not by hand: it takes the CNI_* environment variables and the network configuration on standard input, creates the workload's veth interface and routes, and writes its WorkloadEndpoint to etcd, where calico-felix enforces its policy. IP addresses come from the IPAM plugin named in the configuration, normally calico-ipam(8). Without CNI_COMMAND it prints its name and the CNI versions it supports, shown below.",
		files:       []string{"/opt/cni/bin/calico", "/etc/cni/net.d/", "/usr/share/doc/calico-cni/examples/10-calico.conflist", "/etc/calico/datastore.toml"},
		seeAlso:     []string{"calico-ipam(8)", "calico-felix(8)", "calico-datastore.toml(5)"}},
	{name: "calico-ipam", section: "8", summary: "Calico IPAM plugin for CNI (block IPAM in etcd)",
		help: []string{"calico-ipam"}, env: []string{"CNI_COMMAND=VERSION"},
		description: "calico-ipam is a CNI IPAM plugin, installed in /opt/cni/bin and run by the calico(8) plugin: it assigns workload addresses from Calico's IP pools with block affinities and handles in etcd (every write a compare-and-swap) and releases them again. Without CNI_COMMAND it prints its name and the CNI versions it supports, shown below.",
		files:       []string{"/opt/cni/bin/calico-ipam", "/etc/calico/datastore.toml"},
		seeAlso:     []string{"calico(8)", "calicoctl(1)", "calico-datastore.toml(5)"}},
	{name: "calicoctl", section: "1", summary: "manage Calico resources in the etcd datastore",
		help:        []string{"calicoctl", "--help"},
		subcommands: []string{"apply", "cluster", "create", "datastore", "delete", "get", "ipam", "label", "node", "patch", "replace", "validate", "version"},
		files:       []string{"/etc/calico/datastore.toml"},
		seeAlso:     []string{"calico-datastore.toml(5)", "calico-startup(8)", "calico-felix(8)"}},
}

var tomls = []tomlPage{
	{name: "calico-felix.toml", src: "etc/calico/felix.toml", dst: "/etc/calico/felix.toml", summary: "calico-felix configuration file",
		seeAlso: []string{"calico-felix(8)", "calico-datastore.toml(5)"}},
	{name: "calico-confd.toml", src: "etc/calico/confd.toml", dst: "/etc/calico/confd.toml", summary: "calico-confd configuration file",
		seeAlso: []string{"calico-confd(8)", "calico-datastore.toml(5)"}},
	{name: "calico-node.toml", src: "etc/calico/node.toml", dst: "/etc/calico/node.toml", summary: "calico-startup configuration file",
		seeAlso: []string{"calico-startup(8)", "calico-datastore.toml(5)"}},
	{name: "calico-datastore.toml", src: "etc/calico/datastore.toml", dst: "/etc/calico/datastore.toml", summary: "calico-host etcd datastore connection",
		seeAlso: []string{"calico-startup(8)", "calico-confd(8)", "calico-felix(8)", "calicoctl(1)", "calico(8)"}},
}

func main() {
	bin := flag.String("bin", "bin", "directory with the built binaries")
	out := flag.String("out", "docs/man", "output directory")
	flag.Parse()
	pages, err := Generate(*bin, ".")
	if err == nil {
		err = write(*out, pages)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "man:", err)
		os.Exit(1)
	}
}

func write(dir string, pages map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, text := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Generate returns every page by file name (calico-felix.8, ...), from the binaries in bin and
// the files under root.
func Generate(bin, root string) (map[string]string, error) {
	pages := map[string]string{}
	for _, b := range binaries {
		text, err := b.render(bin)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.name, err)
		}
		pages[b.name+"."+b.section] = text
	}
	for _, t := range tomls {
		src, err := os.ReadFile(filepath.Join(root, t.src))
		if err != nil {
			return nil, err
		}
		pages[t.name+".5"] = t.render(string(src))
	}
	return pages, nil
}

// runHelp runs a help command and returns its output (stdout and stderr), whatever its status.
func runHelp(bin string, args, env []string) (string, error) {
	cmd := exec.Command(filepath.Join(bin, args[0]), args[1:]...)
	cmd.Args[0] = args[0]
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "LANG=C", "HOME=/nonexistent"}, env...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		return "", err
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("%v printed nothing", args)
	}
	return b.String(), nil
}

func (b binaryPage) render(bin string) (string, error) {
	help, err := runHelp(bin, b.help, b.env)
	if err != nil {
		return "", err
	}
	var w strings.Builder
	header(&w, b.name, b.section, b.summary)
	w.WriteString(".SH SYNOPSIS\n.B " + b.name + "\n[\\fIoptions\\fR]\n")
	w.WriteString(".SH DESCRIPTION\n")
	if b.description != "" {
		w.WriteString(text(b.description) + "\n.PP\n")
	}
	w.WriteString("The output of\n.B " + escape(strings.Join(b.help, " ")) + "\nfollows.\n")
	preformatted(&w, help)
	for _, sub := range b.subcommands {
		out, err := runHelp(bin, []string{b.name, sub, "--help"}, nil)
		if err != nil {
			return "", err
		}
		w.WriteString(".SH \"" + strings.ToUpper(b.name+" "+sub) + "\"\n")
		preformatted(&w, out)
	}
	files(&w, b.files)
	seeAlso(&w, b.seeAlso)
	return w.String(), nil
}

func header(w *strings.Builder, name, section, summary string) {
	fmt.Fprintf(w, ".TH %s %s \"\" \"calico-host\" \"calico-host manual\"\n", strings.ToUpper(escape(name)), section)
	fmt.Fprintf(w, ".SH NAME\n%s \\- %s\n", escape(name), escape(summary))
	w.WriteString(".ad l\n") // ragged right: long lists and paths need no stretched spaces
}

func preformatted(w *strings.Builder, s string) {
	w.WriteString(".PP\n.nf\n.ft CR\n")
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		w.WriteString(preLine(l) + "\n")
	}
	w.WriteString(".ft R\n.fi\n")
}

func files(w *strings.Builder, fs []string) {
	if len(fs) == 0 {
		return
	}
	w.WriteString(".SH FILES\n")
	for _, f := range fs {
		w.WriteString(".TP\n.I " + escape(f) + "\n")
	}
}

func seeAlso(w *strings.Builder, refs []string) {
	var parts []string
	for _, r := range refs {
		name, sec, _ := strings.Cut(strings.TrimSuffix(r, ")"), "(")
		parts = append(parts, ".BR "+escape(name)+" ("+sec+")")
	}
	w.WriteString(".SH SEE ALSO\n" + strings.Join(parts, " ,\n") + "\n")
}

// settingRE matches a setting line of a commented TOML file, commented out or not.
var settingRE = regexp.MustCompile(`^#?\s?([A-Za-z_][A-Za-z0-9_]*\s*=\s*.*|\[\[?[a-z_]+\]\]?)$`)

// render turns the commented TOML into a page: the first comment block is the description,
// every later block a paragraph, tagged with the settings it shows.
func (t tomlPage) render(src string) string {
	var w strings.Builder
	header(&w, t.name, "5", t.summary)
	w.WriteString(".SH SYNOPSIS\n.I " + escape(t.dst) + "\n.SH DESCRIPTION\n")
	blocks := strings.Split(strings.TrimSpace(src), "\n\n")
	w.WriteString(text(commentText(blocks[0])) + "\n.SH SETTINGS\nThe settings as the shipped file shows them (commented out: the default).\n")
	for _, blk := range blocks[1:] {
		var settings, prose []string
		for _, l := range strings.Split(blk, "\n") {
			if settingRE.MatchString(l) {
				settings = append(settings, strings.TrimSpace(strings.TrimPrefix(l, "#")))
			} else {
				prose = append(prose, l)
			}
		}
		if len(settings) == 0 {
			w.WriteString(".PP\n" + text(commentText(strings.Join(prose, "\n"))) + "\n")
			continue
		}
		w.WriteString(".TP\n")
		for i, s := range settings {
			if i > 0 {
				w.WriteString(".TQ\n")
			}
			w.WriteString("\\&\\fB" + breakable(escape(s)) + "\\fR\n")
		}
		if p := commentText(strings.Join(prose, "\n")); p != "" {
			w.WriteString(text(p) + "\n")
		}
	}
	w.WriteString(".SH FILES\n.TP\n.I " + escape(t.dst) + "\n")
	seeAlso(&w, t.seeAlso)
	return w.String()
}

// commentText strips the comment markers of a block, keeping its lines.
func commentText(blk string) string {
	var out []string
	for _, l := range strings.Split(blk, "\n") {
		l = strings.TrimPrefix(strings.TrimPrefix(l, "#"), " ")
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// text renders prose: lines are kept (indented or numbered lines start a new output line);
// empty lines become paragraph breaks.
func text(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		switch {
		case strings.TrimSpace(l) == "":
			out = append(out, ".PP")
		case strings.HasPrefix(l, " "):
			out = append(out, ".br", line(strings.TrimLeft(l, " ")))
		default:
			out = append(out, line(l))
		}
	}
	return strings.Join(out, "\n")
}

// line escapes one line of text for roff.
func line(l string) string {
	l = breakable(escape(l))
	if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
		l = "\\&" + l
	}
	return l
}

// preLine escapes one line of preformatted text.
func preLine(l string) string {
	l = escape(l)
	if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
		l = "\\&" + l
	}
	return l
}

// breakable lets roff break long lists after their commas.
func breakable(s string) string { return strings.ReplaceAll(s, ",", ",\\:") }

// escape escapes backslashes and minus signs (which roff would otherwise print as hyphens).
func escape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	return strings.ReplaceAll(s, "-", `\-`)
}
