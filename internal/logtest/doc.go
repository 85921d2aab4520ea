// Package logtest provides log sinks for tests: a buffer that daemons' goroutines write to while
// the test reads it, and loggers that write to the test's own log.
//
// logtest.go: Buffer, an io.Writer safe for concurrent writes, and its String.
// logger.go: Logger (warnings and errors to the test's log) and Capture (to the test's log and a Buffer).
package logtest
