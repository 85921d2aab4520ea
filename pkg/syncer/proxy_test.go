package syncer_test

import (
	"io"
	"net"
	"sync"
	"testing"
)

// tcpProxy forwards loopback connections to etcd and can cut them: Cut closes every connection and
// holds new ones until Resume, so the client reconnects (and resumes its watches) only then.
type tcpProxy struct {
	t      testing.TB
	target string
	ln     net.Listener

	mu      sync.Mutex
	cut     bool
	resumed chan struct{}
	conns   map[net.Conn]struct{}
}

func startProxy(t testing.TB, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &tcpProxy{t: t, target: target, ln: ln, conns: map[net.Conn]struct{}{}, resumed: make(chan struct{})}
	close(p.resumed)
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.Cut() })
	return p
}

func (p *tcpProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *tcpProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *tcpProxy) serve(c net.Conn) {
	p.mu.Lock()
	resumed := p.resumed
	p.mu.Unlock()
	<-resumed // held while cut
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, up) {
		return
	}
	go func() { io.Copy(up, c); up.Close(); c.Close() }()
	io.Copy(c, up)
	c.Close()
	up.Close()
}

// track registers a live pair, unless the proxy was cut meanwhile.
func (p *tcpProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// Cut closes every forwarded connection and holds new ones until Resume.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		p.cut = true
		p.resumed = make(chan struct{})
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]struct{}{}
}

// Resume lets held and new connections through.
func (p *tcpProxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		p.cut = false
		close(p.resumed)
	}
}
