package dataplane

import (
	"errors"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/netnstest"
)

// Real traffic between the test namespaces, made with sockets opened inside them.

// hostPort is addr:port, with an IPv6 address in brackets.
func hostPort(addr string, port int) string { return net.JoinHostPort(addr, strconv.Itoa(port)) }

// tcpServer accepts connections on addr:port in ns and remembers their peers; it echoes what
// it reads.
type tcpServer struct {
	mu      sync.Mutex
	peers   []string
	remotes []netip.AddrPort
}

func listenTCP(t *testing.T, ns *netnstest.NS, addr string, port int) *tcpServer {
	t.Helper()
	var ln net.Listener
	ns.Do(t, func() {
		var err error
		if ln, err = net.Listen("tcp", hostPort(addr, port)); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { ln.Close() })
	s := &tcpServer{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			s.mu.Lock()
			s.peers = append(s.peers, host)
			s.remotes = append(s.remotes, c.RemoteAddr().(*net.TCPAddr).AddrPort())
			s.mu.Unlock()
			go func() {
				defer c.Close()
				buf := make([]byte, 64)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

// lastPeer is the peer of the last accepted connection; it waits a little for the accept
// that follows a successful dial.
func (s *tcpServer) lastPeer() string {
	for range 100 {
		s.mu.Lock()
		n := len(s.peers)
		s.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.peers) == 0 {
		return ""
	}
	return s.peers[len(s.peers)-1]
}

// lastRemote is the address and port of the last accepted connection's peer (after lastPeer).
func (s *tcpServer) lastRemote() netip.AddrPort {
	s.lastPeer()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.remotes) == 0 {
		return netip.AddrPort{}
	}
	return s.remotes[len(s.remotes)-1]
}

// dialTCP connects from ns; it returns the connection or the error.
func dialTCP(t *testing.T, ns *netnstest.NS, addr string, port int) (net.Conn, error) {
	t.Helper()
	var c net.Conn
	var err error
	ns.Do(t, func() {
		c, err = net.DialTimeout("tcp", hostPort(addr, port), 400*time.Millisecond)
	})
	return c, err
}

// canTCP reports whether a TCP connection from ns to addr:port is established.
func canTCP(t *testing.T, ns *netnstest.NS, addr string, port int) bool {
	t.Helper()
	c, err := dialTCP(t, ns, addr, port)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// echo sends a message on an established connection and reports whether it came back.
func echo(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("ping")); err != nil {
		return err
	}
	buf := make([]byte, 4)
	if _, err := c.Read(buf); err != nil {
		return err
	}
	if string(buf) != "ping" {
		return errors.New("wrong echo")
	}
	return nil
}

// udpServer echoes datagrams on addr:port in ns and remembers their sources.
type udpServer struct {
	mu      sync.Mutex
	sources []string
	peers   []netip.AddrPort
}

func listenUDP(t *testing.T, ns *netnstest.NS, addr string, port int) *udpServer {
	t.Helper()
	var pc net.PacketConn
	ns.Do(t, func() {
		var err error
		if pc, err = net.ListenPacket("udp", hostPort(addr, port)); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { pc.Close() })
	s := &udpServer{}
	go func() {
		buf := make([]byte, 64)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(from.String())
			s.mu.Lock()
			s.sources = append(s.sources, host)
			s.peers = append(s.peers, from.(*net.UDPAddr).AddrPort())
			s.mu.Unlock()
			_, _ = pc.WriteTo(buf[:n], from)
		}
	}()
	return s
}

func (s *udpServer) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sources, s.peers = nil, nil
}

// lastPeer is the source address and port of the last datagram.
func (s *udpServer) lastPeer() netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.peers) == 0 {
		return netip.AddrPort{}
	}
	return s.peers[len(s.peers)-1]
}

func (s *udpServer) received(from string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, src := range s.sources {
		if src == from {
			return true
		}
	}
	return false
}

// canUDP sends a datagram from ns (from local address src, "addr" or "addr:port", "" for any)
// and reports whether the echo came back.
func canUDP(t *testing.T, ns *netnstest.NS, src, addr string, port int) bool {
	t.Helper()
	ok := false
	ns.Do(t, func() {
		var laddr *net.UDPAddr
		if src != "" {
			ap, err := netip.ParseAddrPort(src)
			if err != nil {
				ap = netip.AddrPortFrom(netip.MustParseAddr(src), 0)
			}
			laddr = net.UDPAddrFromAddrPort(ap)
		}
		c, err := net.DialUDP("udp", laddr, &net.UDPAddr{IP: net.ParseIP(addr), Port: port})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for range 3 {
			_ = c.SetDeadline(time.Now().Add(200 * time.Millisecond))
			if _, err := c.Write([]byte("hi")); err != nil {
				continue
			}
			buf := make([]byte, 8)
			if _, err := c.Read(buf); err == nil {
				ok = true
				return
			}
		}
	})
	return ok
}

// canPing sends one ICMP echo request from ns.
func canPing(t *testing.T, ns *netnstest.NS, addr string) bool {
	t.Helper()
	return exec.Command("ip", "netns", "exec", ns.Name, "ping", "-c", "1", "-W", "1", "-q", addr).Run() == nil
}

// expectation is one connectivity check.
type expectation struct {
	what string
	got  func() bool
	want bool
}

func check(t *testing.T, stage string, exps ...expectation) {
	t.Helper()
	for _, e := range exps {
		if got := e.got(); got != e.want {
			t.Errorf("%s: %s = %v, want %v", stage, e.what, got, e.want)
		}
	}
}
