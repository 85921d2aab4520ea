package cni

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"
)

// NewLogger logs at log_level (default info) to log_file_path (default
// /var/log/calico/cni/cni.log) and, from warnings up, to stderr. The returned func closes the file.
func NewLogger(conf *NetConf, stderr io.Writer, plugin string) (zerolog.Logger, func()) {
	level := parseLevel(conf.LogLevel)
	writers := []io.Writer{levelFilter{w: stderr, min: zerolog.WarnLevel}}
	closer := func() {}
	path := conf.LogFilePath
	if path == "" {
		path = DefaultLogFile
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		if f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			writers = append(writers, f)
			closer = func() { f.Close() }
		}
	}
	l := zerolog.New(zerolog.MultiLevelWriter(writers...)).Level(level).With().Timestamp().
		Str("plugin", plugin).Int("pid", os.Getpid()).Logger()
	return l, closer
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
