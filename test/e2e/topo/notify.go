package topo

import (
	"net"
	"os"
	"strings"
	"sync"
)

// Notify stands in for systemd's notification socket of one daemon: it records the READY=1
// and the latest STATUS= the daemon sent (sd_notify), as systemctl status would show them.
type Notify struct {
	Path string
	conn *net.UnixConn

	mu     sync.Mutex
	ready  bool
	status string
	all    []string
}

// listenNotify creates the socket at path.
func listenNotify(path string) (*Notify, error) {
	os.Remove(path)
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, err
	}
	n := &Notify{Path: path, conn: conn}
	go n.read()
	return n, nil
}

func (n *Notify) read() {
	buf := make([]byte, 8192)
	for {
		k, err := n.conn.Read(buf)
		if err != nil {
			return
		}
		n.mu.Lock()
		for _, line := range strings.Split(strings.TrimSpace(string(buf[:k])), "\n") {
			n.all = append(n.all, line)
			switch {
			case line == "READY=1":
				n.ready = true
			case strings.HasPrefix(line, "STATUS="):
				n.status = strings.TrimPrefix(line, "STATUS=")
			}
		}
		n.mu.Unlock()
	}
}

// reset forgets what an earlier run of the daemon said.
func (n *Notify) reset() {
	n.mu.Lock()
	n.ready, n.status, n.all = false, "", nil
	n.mu.Unlock()
}

// Ready says whether the daemon sent READY=1.
func (n *Notify) Ready() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ready
}

// Status is the last STATUS= the daemon sent.
func (n *Notify) Status() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.status
}

// Statuses returns every STATUS= sent so far, oldest first.
func (n *Notify) Statuses() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, l := range n.all {
		if s, ok := strings.CutPrefix(l, "STATUS="); ok {
			out = append(out, s)
		}
	}
	return out
}

// Close closes the socket.
func (n *Notify) Close() { n.conn.Close() }
