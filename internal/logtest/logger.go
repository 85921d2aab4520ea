package logtest

import (
	"testing"

	"github.com/rs/zerolog"
)

// Logger returns a logger that writes to the test's log, at level and above.
func Logger(t testing.TB, level zerolog.Level) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(level)
}

// Capture returns a logger that writes every level both to the test's log and to the returned
// Buffer, for tests that check what was logged.
func Capture(t testing.TB) (zerolog.Logger, *Buffer) {
	b := &Buffer{}
	return zerolog.New(zerolog.MultiLevelWriter(zerolog.NewTestWriter(t), b)), b
}
