package cni

import (
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// NewLogger logs at log_level (default info) to log_file_path (default
// /var/log/calico/cni/cni.log, rotated as log_file_max_size/_age/_count say) and, from warnings
// up, to stderr. The returned func closes the file. A log file that cannot be opened (or rotated)
// is reported on stderr; the command goes on.
func NewLogger(conf *NetConf, stderr io.Writer, plugin string) (zerolog.Logger, func()) {
	level := parseLevel(conf.LogLevel)
	writers := []io.Writer{levelFilter{w: stderr, min: zerolog.WarnLevel}}
	closer := func() {}
	f, err := conf.openLog(time.Now())
	if err == nil {
		writers = append(writers, f)
		closer = func() { f.Close() }
	}
	l := zerolog.New(zerolog.MultiLevelWriter(writers...)).Level(level).With().Timestamp().
		Str("plugin", plugin).Int("pid", os.Getpid()).Logger()
	if err != nil {
		l.Warn().Err(err).Msg("logging to stderr only")
	}
	return l, closer
}

// openLog opens the log file (see openLogFile).
func (c *NetConf) openLog(now time.Time) (*os.File, error) {
	path, err := pathOr("log_file_path", c.LogFilePath, DefaultLogFile)
	if err != nil {
		return nil, err
	}
	r, err := c.rotation()
	if err != nil {
		return nil, err
	}
	return openLogFile(path, r, now)
}

func parseLevel(s string) zerolog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return zerolog.DebugLevel
	case "warning", "warn":
		return zerolog.WarnLevel
	case "error":
		return zerolog.ErrorLevel
	case "fatal", "panic":
		return zerolog.FatalLevel
	case "none":
		return zerolog.Disabled
	}
	return zerolog.InfoLevel
}

// levelFilter passes on only events at or above min.
type levelFilter struct {
	w   io.Writer
	min zerolog.Level
}

func (f levelFilter) Write(p []byte) (int, error) { return len(p), nil }

func (f levelFilter) WriteLevel(l zerolog.Level, p []byte) (int, error) {
	if l < f.min {
		return len(p), nil
	}
	return f.w.Write(p)
}
