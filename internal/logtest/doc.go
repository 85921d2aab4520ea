// Package logtest provides a log sink for tests that daemons' goroutines write to while the test
// reads it.
//
// One file, logtest.go: Buffer, an io.Writer safe for concurrent writes, and its String.
package logtest
