package topo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Servers answer TCP and UDP probes inside a namespace. A TCP server greets each connection with
// "<name> <client address>\n" and then echoes every line it receives; a UDP server answers
// every datagram with the same greeting. The client address shows what NAT did.
type Servers struct {
	name    string
	closers []func() error
	wg      sync.WaitGroup
}

// Serve starts TCP and UDP servers on the given ports (all addresses, both families) inside the
// namespace. Close stops them.
func (n *Netns) Serve(name string, ports ...int) (*Servers, error) {
	s := &Servers{name: name}
	for _, p := range ports {
		l, err := n.Listen(":" + strconv.Itoa(p))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("TCP server on %s:%d: %w", n.Name, p, err)
		}
		s.closers = append(s.closers, l.Close)
		s.wg.Add(1)
		go s.acceptLoop(l)
		u, err := n.ListenPacket(":" + strconv.Itoa(p))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("UDP server on %s:%d: %w", n.Name, p, err)
		}
		s.closers = append(s.closers, u.Close)
		s.wg.Add(1)
		go s.udpLoop(u)
	}
	return s, nil
}

// Close stops the servers (established connections are closed by their clients).
func (s *Servers) Close() {
	for _, c := range s.closers {
		c()
	}
	s.wg.Wait()
}

func (s *Servers) acceptLoop(l net.Listener) {
	defer s.wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go s.handle(c)
	}
}

func (s *Servers) handle(c net.Conn) {
	defer c.Close()
	fmt.Fprintf(c, "%s %s\n", s.name, hostOf(c.RemoteAddr()))
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if _, err := c.Write([]byte(line)); err != nil {
			return
		}
	}
}

func (s *Servers) udpLoop(u net.PacketConn) {
	defer s.wg.Done()
	buf := make([]byte, 1500)
	for {
		_, from, err := u.ReadFrom(buf)
		if err != nil {
			return
		}
		u.WriteTo([]byte(fmt.Sprintf("%s %s\n", s.name, hostOf(from))), from)
	}
}

func hostOf(a net.Addr) string {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return a.String()
	}
	return ap.Addr().Unmap().String()
}

// Greeting is a server's answer: who answered and the client address it saw.
type Greeting struct {
	Server string
	Client netip.Addr
}

func parseGreeting(line string) (Greeting, error) {
	name, addr, ok := strings.Cut(strings.TrimSpace(line), " ")
	if !ok {
		return Greeting{}, fmt.Errorf("bad greeting %q", line)
	}
	a, err := netip.ParseAddr(addr)
	return Greeting{Server: name, Client: a}, err
}

// TCP connects from the namespace to dst and reads the greeting. A connection that is
// dropped shows as a timeout, a rejected one as "connection refused".
func (n *Netns) TCP(ctx context.Context, dst netip.AddrPort, timeout time.Duration) (Greeting, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := n.DialContext(ctx, "tcp", dst.String())
	if err != nil {
		return Greeting{}, err
	}
	return readGreeting(ctx, c, dst)
}

// readGreeting reads the greeting line of the server at dst on c, until ctx's deadline, and
// closes c.
func readGreeting(ctx context.Context, c net.Conn, dst netip.AddrPort) (Greeting, error) {
	defer c.Close()
	d, _ := ctx.Deadline()
	c.SetDeadline(d)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return Greeting{}, fmt.Errorf("reading the greeting from %s: %w", dst, err)
	}
	return parseGreeting(line)
}

// UDP sends a datagram from the namespace to dst and waits for the answer, resending every
// 300 ms (UDP may lose the first packet while neighbours resolve).
func (n *Netns) UDP(ctx context.Context, dst netip.AddrPort, timeout time.Duration) (Greeting, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := n.DialContext(ctx, "udp", dst.String())
	if err != nil {
		return Greeting{}, err
	}
	defer c.Close()
	buf := make([]byte, 1500)
	for {
		if _, err := c.Write([]byte("probe\n")); err != nil {
			return Greeting{}, err
		}
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		k, err := c.Read(buf)
		if err == nil {
			return parseGreeting(string(buf[:k]))
		}
		if ctx.Err() != nil {
			return Greeting{}, fmt.Errorf("no UDP answer from %s within %s", dst, timeout)
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			// ICMP unreachable shows as a read error; wait before resending.
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}
}

// Ping sends ICMP echo requests from the namespace until one is answered or the timeout passes.
func (n *Netns) Ping(ctx context.Context, dst netip.Addr, timeout time.Duration) error {
	secs := int(timeout.Seconds())
	if secs < 1 {
		secs = 1
	}
	_, err := n.Exec(ctx, "ping", "-q", "-n", "-c", "1", "-i", "0.2", "-w", strconv.Itoa(secs), dst.String())
	return err
}

// Conn is a long-lived TCP connection used to prove established flows survive.
type Conn struct {
	c net.Conn
	r *bufio.Reader
}

// OpenConn connects from the namespace to dst and reads the greeting.
func (n *Netns) OpenConn(ctx context.Context, dst netip.AddrPort, timeout time.Duration) (*Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := n.DialContext(ctx, "tcp", dst.String())
	if err != nil {
		return nil, err
	}
	conn := &Conn{c: c, r: bufio.NewReader(c)}
	c.SetReadDeadline(time.Now().Add(timeout))
	if _, err := conn.r.ReadString('\n'); err != nil {
		c.Close()
		return nil, err
	}
	return conn, nil
}

// Echo sends a line and waits for it to come back.
func (c *Conn) Echo(msg string, timeout time.Duration) error {
	c.c.SetDeadline(time.Now().Add(timeout))
	if _, err := fmt.Fprintln(c.c, msg); err != nil {
		return err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != msg {
		return fmt.Errorf("echo %q, sent %q", strings.TrimSpace(line), msg)
	}
	return nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// AddrPort joins an address and a port.
func AddrPort(a netip.Addr, port int) netip.AddrPort { return netip.AddrPortFrom(a, uint16(port)) }
