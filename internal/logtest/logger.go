package logtest

import (
	"testing"

	"github.com/rs/zerolog"
)

// Logger returns a logger that writes warnings and errors to the test's log (debug and info
// lines would bury a failing test's own messages).
func Logger(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

// Capture returns a logger that writes every level both to the test's log and to the returned
// Buffer, for tests that check what was logged.
func Capture(t testing.TB) (zerolog.Logger, *Buffer) {
	b := &Buffer{}
	return zerolog.New(zerolog.MultiLevelWriter(zerolog.NewTestWriter(t), b)), b
}
