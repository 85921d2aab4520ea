package calicoctl

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// errHelp is returned after a command printed its help: the exit code is 0.
var errHelp = errors.New("help requested")

// flags wraps a flag.FlagSet whose options have a short and a long spelling (-f/--filename) and
// may appear before, between or after the positional arguments, as with Project Calico's docopt
// parser.
type flags struct {
	fs       *flag.FlagSet
	usage    string
	cmd      string
	logLevel string
}

// newFlags returns the option parser of a command, with Project Calico's global options, which
// every command accepts anywhere on its command line: -l/--log-level (validated, otherwise
// unused: calicoctl prints only errors), --context (Kubernetes only) and
// --allow-version-mismatch (calico-host never compares versions).
func newFlags(cmd, usage string) *flags {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &flags{fs: fs, usage: usage, cmd: cmd}
	var context string
	var allowMismatch bool
	f.str(&f.logLevel, "", "l", "log-level")
	f.str(&context, "", "context")
	f.boolean(&allowMismatch, "allow-version-mismatch")
	return f
}

// str defines a string option under every given name ("f", "filename").
func (f *flags) str(p *string, value string, names ...string) {
	*p = value
	for _, n := range names {
		f.fs.StringVar(p, n, value, "")
	}
}

// strs defines a repeatable string option under every given name: each use appends.
func (f *flags) strs(p *[]string, names ...string) {
	for _, n := range names {
		f.fs.Func(n, "", func(v string) error { *p = append(*p, v); return nil })
	}
}

// boolean defines a boolean option under every given name.
func (f *flags) boolean(p *bool, names ...string) {
	for _, n := range names {
		f.fs.BoolVar(p, n, false, "")
	}
}

// common defines the option every datastore command takes: -c/--config.
func (f *flags) common(configPath *string) {
	f.str(configPath, "", "c", "config")
}

// parse parses args, allowing options anywhere, and returns the positional arguments. -h/--help
// prints the usage to out and returns errHelp.
func (f *flags) parse(args []string, out io.Writer) ([]string, error) {
	orig := strings.Join(args, " ")
	var pos []string
	for {
		err := f.fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(out, f.usage)
			return nil, errHelp
		}
		if err != nil {
			return nil, failf("Invalid option: 'calicoctl %s %s' (%v). Use flag '--help' to read about a specific subcommand.",
				f.cmd, orig, err)
		}
		args = f.fs.Args()
		if len(args) == 0 {
			if f.logLevel != "" && !validLogLevel(f.logLevel) {
				return nil, logLevelError(f.logLevel)
			}
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// names lists the options defined, each with its dashes ("--filename", "-f"), sorted.
func (f *flags) names() []string {
	var out []string
	f.fs.VisitAll(func(fl *flag.Flag) {
		if len(fl.Name) == 1 {
			out = append(out, "-"+fl.Name)
		} else {
			out = append(out, "--"+fl.Name)
		}
	})
	sort.Strings(out)
	return out
}

// parseFlags parses a command's options (see flags.parse), first telling c.flagsDefined, when
// set, which options the command defines (the documentation test collects them so).
func (c *cli) parseFlags(f *flags, args []string) ([]string, error) {
	if c.flagsDefined != nil {
		c.flagsDefined(f.cmd, f.names())
	}
	return f.parse(args, c.stdout)
}
