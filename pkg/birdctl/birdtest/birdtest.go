// Package birdtest serves BIRD's control protocol on a unix socket for unit tests: BIRD's
// greeting, then for each command line the reply the test scripts. Tests of the real thing run
// BIRD itself (see pkg/confd's real-BGP tests).
package birdtest

import (
	"bufio"
	"net"
	"strings"
	"testing"
)

// SyntaxError is BIRD's reply to a command it does not know.
const SyntaxError = "9001 syntax error\n"

// Serve answers on the unix socket path, until the test ends, every command (trimmed) with
// reply(command): raw reply lines, each ending in "\n". reply may be called from several
// connections at once.
func Serve(t testing.TB, path string, reply func(cmd string) string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go serve(conn, reply)
		}
	}()
}

func serve(conn net.Conn, reply func(string) string) {
	defer conn.Close()
	conn.Write([]byte("0001 BIRD 2.0.12 ready.\n"))
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		conn.Write([]byte(reply(strings.TrimSpace(line))))
	}
}

// Replies answers the commands of a table, and any other with SyntaxError.
func Replies(table map[string]string) func(string) string {
	return func(cmd string) string {
		if r, ok := table[cmd]; ok {
			return r
		}
		return SyntaxError
	}
}
