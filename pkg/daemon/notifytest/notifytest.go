package notifytest

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Socket is a unixgram socket standing in for systemd's $NOTIFY_SOCKET.
type Socket struct {
	Path string
	msgs chan string
}

// Listen creates the socket and sets NOTIFY_SOCKET for the test (so the test must not be parallel).
// With watchdog > 0 it also sets WATCHDOG_USEC.
func Listen(t testing.TB, watchdog time.Duration) *Socket {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listening on %s: %v", path, err)
	}
	s := &Socket{Path: path, msgs: make(chan string, 1024)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(s.msgs)
				return
			}
			for _, line := range strings.Split(strings.TrimSpace(string(buf[:n])), "\n") {
				s.msgs <- line
			}
		}
	}()
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	if watchdog > 0 {
		t.Setenv("WATCHDOG_USEC", itoa(watchdog.Microseconds()))
	}
	return s
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	for n >= 10 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	i--
	b[i] = byte('0' + n)
	return string(b[i:])
}

// Messages is the stream of received lines ("READY=1", "STATUS=...", "WATCHDOG=1").
func (s *Socket) Messages() <-chan string { return s.msgs }

// WaitFor waits for a line with the given prefix, returning the lines seen before it.
func (s *Socket) WaitFor(t testing.TB, prefix string, timeout time.Duration) []string {
	t.Helper()
	var seen []string
	deadline := time.After(timeout)
	for {
		select {
		case m, ok := <-s.msgs:
			if !ok {
				t.Fatalf("notify socket closed while waiting for %q (seen %q)", prefix, seen)
			}
			if strings.HasPrefix(m, prefix) {
				return seen
			}
			seen = append(seen, m)
		case <-deadline:
			t.Fatalf("no %q within %s (seen %q)", prefix, timeout, seen)
		}
	}
}

// Drain returns every line received so far without waiting.
func (s *Socket) Drain() []string {
	var out []string
	for {
		select {
		case m, ok := <-s.msgs:
			if !ok {
				return out
			}
			out = append(out, m)
		default:
			return out
		}
	}
}
