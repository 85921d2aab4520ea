package topo

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// NftMonitor follows "nft monitor" in a namespace: the kernel's own notification of every
// committed nftables change. A waiter learns when a line holding its token appeared.
type NftMonitor struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	token  string
	notify chan time.Time
	last   time.Time // when the last line arrived
}

// StartNftMonitor starts "nft monitor" in ns. Started after a big ruleset is programmed, it
// first reads the whole ruleset (seconds) before it reports anything.
func StartNftMonitor(ns *Netns) (*NftMonitor, error) {
	// stdbuf: nft's output is line-buffered even into a pipe, so each event is seen at once.
	cmd := exec.Command("ip", "netns", "exec", ns.Name, "stdbuf", "-oL", "nft", "monitor")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	m := &NftMonitor{cmd: cmd}
	go m.read(out)
	return m, nil
}

func (m *NftMonitor) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		now := time.Now()
		m.mu.Lock()
		m.last = now
		if m.token != "" && hasToken(sc.Text(), m.token) {
			m.notify <- now
			m.token = ""
		}
		m.mu.Unlock()
	}
}

// Quiet waits until no line arrived for d (the monitor has printed everything so far).
func (m *NftMonitor) Quiet(ctx context.Context, d time.Duration) error {
	return Eventually(ctx, 5*time.Minute, 100*time.Millisecond, func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if since := time.Since(m.last); since < d {
			return fmt.Errorf("nft monitor printed a line %s ago", since)
		}
		return nil
	})
}

// Expect registers the token the next change will produce: the channel receives the time a
// line holding it appeared.
func (m *NftMonitor) Expect(token string) <-chan time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.token, m.notify = token, make(chan time.Time, 1)
	return m.notify
}

// Stop ends the monitor.
func (m *NftMonitor) Stop() {
	m.cmd.Process.Kill()
	m.cmd.Wait()
}

// hasToken finds tok in s not surrounded by digits or dots (so 41005 does not match 410050
// and 10.66.0.5 does not match 10.66.0.50).
func hasToken(s, tok string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], tok)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(tok)
		if (start == 0 || !numeric(s[start-1])) && (end == len(s) || !numeric(s[end])) {
			return true
		}
		i = start + 1
	}
}

func numeric(c byte) bool { return c >= '0' && c <= '9' || c == '.' }
