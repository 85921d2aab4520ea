package daemon

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// ParseLevel accepts Project Calico's severities (Trace, Debug, Info, Warning, Error, Fatal, Panic,
// None) and zerolog's names, case-insensitively.
func ParseLevel(s string) (zerolog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "trace":
		return zerolog.TraceLevel, nil
	case "debug":
		return zerolog.DebugLevel, nil
	case "", "info":
		return zerolog.InfoLevel, nil
	case "warning", "warn":
		return zerolog.WarnLevel, nil
	case "error":
		return zerolog.ErrorLevel, nil
	case "fatal":
		return zerolog.FatalLevel, nil
	case "panic":
		return zerolog.PanicLevel, nil
	case "none":
		return zerolog.Disabled, nil
	}
	return zerolog.InfoLevel, fmt.Errorf("unknown log severity %q (use Debug, Info, Warning, Error, Fatal or None)", s)
}

// LogFormat selects the output format.
type LogFormat string

// Formats: console (coloured, for a terminal), text (plain key=value without timestamps, for
// journald, which adds its own), json.
const (
	FormatAuto    LogFormat = ""
	FormatConsole LogFormat = "console"
	FormatText    LogFormat = "text"
	FormatJSON    LogFormat = "json"
)

// NewLogger builds the logger of one component writing to w (os.Stderr in daemons). With
// FormatAuto it picks console on a terminal, text under journald (JOURNAL_STREAM set) and text
// with timestamps otherwise. CALICO_LOG_FORMAT=json|text|console overrides the choice.
func NewLogger(w io.Writer, component string, level zerolog.Level, format LogFormat) zerolog.Logger {
	if env := os.Getenv("CALICO_LOG_FORMAT"); format == FormatAuto && env != "" {
		format = LogFormat(env)
	}
	var out io.Writer
	switch format {
	case FormatJSON:
		out = w
	case FormatConsole:
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339}
	case FormatText:
		out = textWriter(w, false)
	default:
		switch {
		case isTerminal(w):
			out = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000"}
		case os.Getenv("JOURNAL_STREAM") != "":
			out = textWriter(w, false)
		default:
			out = textWriter(w, true)
		}
	}
	ctx := zerolog.New(out).Level(level).With()
	if format == FormatJSON || format == FormatConsole || os.Getenv("JOURNAL_STREAM") == "" {
		ctx = ctx.Timestamp()
	}
	return ctx.Str("component", component).Logger()
}

func textWriter(w io.Writer, timestamps bool) io.Writer {
	cw := zerolog.ConsoleWriter{Out: w, NoColor: true, TimeFormat: time.RFC3339}
	if !timestamps {
		cw.PartsExclude = []string{zerolog.TimestampFieldName}
	}
	return cw
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
