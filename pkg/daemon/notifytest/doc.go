// Package notifytest provides a fake systemd notification socket for tests.
//
// One file, notifytest.go: Socket (Listen sets NOTIFY_SOCKET and the watchdog interval for the
// test; Messages, WaitFor and Drain read what was sent).
package notifytest
