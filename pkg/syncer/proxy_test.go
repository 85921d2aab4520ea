package syncer_test

import (
	"io"
	"net"
	"sync"
	"testing"
)

// tcpProxy forwards loopback connections to etcd and can cut them: Cut closes every connection and
// holds new ones until Resume, so the client reconnects (and resumes its watches) only then.
// Freeze instead keeps the connections open but stops forwarding bytes until Thaw, like a network
// that silently drops packets: the client sees nothing break.
type tcpProxy struct {
	t      testing.TB
	target string
	ln     net.Listener

	mu      sync.Mutex
	cut     bool
	resumed chan struct{}
	thawed  chan struct{} // closed while not frozen
	conns   map[net.Conn]struct{}
}

func startProxy(t testing.TB, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &tcpProxy{t: t, target: target, ln: ln, conns: map[net.Conn]struct{}{}, resumed: make(chan struct{}),
		thawed: make(chan struct{})}
	close(p.resumed)
	close(p.thawed)
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.Cut(); p.Thaw() })
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
	go func() { p.copy(up, c); up.Close(); c.Close() }()
	p.copy(c, up)
	c.Close()
	up.Close()
}

// copy forwards src to dst, holding what it read while the proxy is frozen.
func (p *tcpProxy) copy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			thawed := p.thawed
			p.mu.Unlock()
			<-thawed
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Freeze stops forwarding on every connection, open or new, until Thaw.
func (p *tcpProxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
		p.thawed = make(chan struct{})
	default:
	}
}

// Thaw forwards again, starting with what was held.
func (p *tcpProxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
	default:
		close(p.thawed)
	}
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
