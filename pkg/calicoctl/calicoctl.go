package calicoctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/calico-host/calico-host/pkg/config"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
)

// exitStatus is an error that only sets the exit status (a command's verdict for scripts,
// after the command printed its result): nothing more is printed.
type exitStatus int

func (e exitStatus) Error() string { return "exit status " + strconv.Itoa(int(e)) }

// command is one calicoctl subcommand. run gets the arguments after the command name.
type command struct {
	name    string
	summary string
	run     func(c *cli, args []string) error
	// refused, for a Project Calico command calico-host does not implement, says why.
	refused string
}

// commands holds every registered command by name.
var commands = map[string]*command{}

// register adds a command; each command's file calls it from init, so a new command (or command
// group, see registerSub) is added by adding a file.
func register(cmd *command) {
	if _, dup := commands[cmd.name]; dup {
		panic("calicoctl: command registered twice: " + cmd.name)
	}
	commands[cmd.name] = cmd
}

// cli is one invocation: where input comes from and output goes, the environment, and the
// context that is cancelled on SIGINT/SIGTERM.
type cli struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	env    config.Env
	// stderrTTY: stderr is a terminal, so long commands may draw progress on it.
	stderrTTY bool
	// flagsDefined, when set, is told the options of each command that parses its options
	// (the documentation test uses it to list what every command accepts).
	flagsDefined func(cmd string, names []string)
}

// Main runs calicoctl with args (without the program name) and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &cli{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, env: config.OSEnv, stderrTTY: isTerminal(stderr)}
	return c.main(args)
}

// run is Main with the context and environment supplied (tests use their own environment).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, env config.Env) int {
	return (&cli{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, env: env}).main(args)
}

// main runs one invocation and returns the exit code.
func (c *cli) main(args []string) int {
	stdout, stderr := c.stdout, c.stderr
	rest, err := parseGlobalOptions(args)
	if errors.Is(err, errHelp) {
		fmt.Fprint(stdout, mainUsage())
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	if len(rest) == 0 {
		fmt.Fprint(stderr, mainUsage())
		return exitError
	}
	cmd, ok := commands[rest[0]]
	if !ok {
		fmt.Fprintf(stderr, "unknown command %q for \"calicoctl\"\n", rest[0])
		return exitError
	}
	err = cmd.run(c, rest[1:])
	var status exitStatus
	switch {
	case errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &status):
		return int(status)
	case err != nil:
		fmt.Fprintln(stderr, massageError(err))
		return exitError
	}
	return exitOK
}

// parseGlobalOptions consumes the options Project Calico accepts before the command name:
// -h/--help, -l/--log-level=<level> (validated, otherwise ignored: we only print errors),
// --context (Kubernetes only; ignored) and --allow-version-mismatch (we never check versions).
// Anything else is refused with the flag parser's message, as Project Calico's.
func parseGlobalOptions(args []string) ([]string, error) {
	f := newFlags("calicoctl", "")
	f.fs.SetInterspersed(false)
	err := f.fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
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

// logLevelError is Project Calico's refusal of a log level logrus does not know.
func logLevelError(level string) error {
	return fmt.Errorf("unknown log level: %s, expected one of: panic, fatal, error, warn, info, debug", level)
}

func validLogLevel(s string) bool {
	switch strings.ToLower(s) {
	case "panic", "fatal", "error", "warn", "warning", "info", "debug", "trace":
		return true
	}
	return false
}

func mainUsage() string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("Usage:\n  calicoctl [options] <command> [<args>...]\n\n")
	for _, n := range names {
		fmt.Fprintf(&b, "    %-12s %s\n", n, commands[n].summary)
	}
	b.WriteString(`
Options:
  -h --help                    Show this screen.
  -l --log-level=<level>       Set the log level (one of panic, fatal, error,
                               warn, info, debug) [default: panic]
     --allow-version-mismatch  Accepted for compatibility; versions are not checked.

Description:
  The calicoctl command line tool is used to manage Calico network and security
  policy, to view and manage endpoint configuration, and to manage a Calico
  node instance.

  See 'calicoctl <command> --help' to read about a specific subcommand.
`)
	return b.String()
}
