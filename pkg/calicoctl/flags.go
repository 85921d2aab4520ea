package calicoctl

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// errHelp is returned after a command printed its help: the exit code is 0.
var errHelp = errors.New("help requested")

// flags wraps a pflag.FlagSet (the flag parser of Project Calico's calicoctl, with its error
// messages: "unknown shorthand flag: 'm' in -m") whose options have a short and a long spelling
// (-f/--filename) and may appear before, between or after the positional arguments.
type flags struct {
	fs       *pflag.FlagSet
	usage    string
	cmd      string
	logLevel string
}

// newFlags returns the option parser of a command, with Project Calico's global options, which
// every command accepts anywhere on its command line: -l/--log-level (validated, otherwise
// unused: calicoctl prints only errors), --context (Kubernetes only) and
// --allow-version-mismatch (calico-host never compares versions).
func newFlags(cmd, usage string) *flags {
	fs := pflag.NewFlagSet(cmd, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &flags{fs: fs, usage: usage, cmd: cmd}
	var context string
	var allowMismatch bool
	f.str(&f.logLevel, "", "l", "log-level")
	f.str(&context, "", "context")
	f.boolean(&allowMismatch, "allow-version-mismatch")
	return f
}

// spellings pairs an option's long names with its one-letter names, in order; a one-letter name
// without a long name of its own gets a hidden one.
func spellings(names []string) (longs, shorts []string) {
	for _, n := range names {
		if len(n) == 1 {
			shorts = append(shorts, n)
		} else {
			longs = append(longs, n)
		}
	}
	for len(longs) < len(shorts) {
		longs = append(longs, "short-"+shorts[len(longs)])
	}
	shorts = append(shorts, make([]string, len(longs)-len(shorts))...)
	return longs, shorts
}

// str defines a string option under every given name ("f", "filename").
func (f *flags) str(p *string, value string, names ...string) {
	longs, shorts := spellings(names)
	for i := range longs {
		f.fs.StringVarP(p, longs[i], shorts[i], value, "")
	}
}

// strs defines a repeatable string option under every given name: each use appends.
func (f *flags) strs(p *[]string, names ...string) {
	longs, shorts := spellings(names)
	for i := range longs {
		f.fs.StringArrayVarP(p, longs[i], shorts[i], nil, "")
	}
}

// boolean defines a boolean option under every given name.
func (f *flags) boolean(p *bool, names ...string) {
	longs, shorts := spellings(names)
	for i := range longs {
		f.fs.BoolVarP(p, longs[i], shorts[i], false, "")
	}
}

// common defines the option every datastore command takes: -c/--config.
func (f *flags) common(configPath *string) {
	f.str(configPath, "", "c", "config")
}

// parse parses args, allowing options anywhere, and returns the positional arguments. -h/--help
// prints the usage to out and returns errHelp.
func (f *flags) parse(args []string, out io.Writer) ([]string, error) {
	err := f.fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(out, f.usage)
		return nil, errHelp
	}
	if err != nil {
		return nil, err
	}
	if f.logLevel != "" && !validLogLevel(f.logLevel) {
		return nil, logLevelError(f.logLevel)
	}
	return f.fs.Args(), nil
}

// names lists the options defined, each with its dashes ("--filename", "-f"), sorted.
func (f *flags) names() []string {
	var out []string
	f.fs.VisitAll(func(fl *pflag.Flag) {
		if !strings.HasPrefix(fl.Name, "short-") {
			out = append(out, "--"+fl.Name)
		}
		if fl.Shorthand != "" {
			out = append(out, "-"+fl.Shorthand)
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
