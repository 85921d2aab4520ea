package topo

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// Packets the plain probes cannot send: from a chosen source address or port, broadcast and
// multicast datagrams bound to a device, gratuitous ARP; and servers that record what reaches
// them.

// TCPFrom connects from a given local address and reads the greeting.
func (n *Netns) TCPFrom(ctx context.Context, src netip.Addr, dst netip.AddrPort, timeout time.Duration) (Greeting, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var c net.Conn
	err := n.Do(func() error {
		var err error
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src.AsSlice()}}
		c, err = d.DialContext(ctx, "tcp", dst.String())
		return err
	})
	if err != nil {
		return Greeting{}, err
	}
	return readGreeting(ctx, c, dst)
}

// SendUDP sends one datagram from src (the address may be unspecified) to dst, with the socket
// bound to dev when dev is not empty and broadcasts allowed; a zone in dst names the interface
// of a link-local or multicast destination.
func (n *Netns) SendUDP(src netip.AddrPort, dst string, dev string, payload []byte) error {
	network := "udp4"
	if src.Addr().Is6() {
		network = "udp6"
	}
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_BROADCAST, 1)
			if serr == nil && dev != "" {
				serr = syscall.BindToDevice(int(fd), dev)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	return n.Do(func() error {
		c, err := lc.ListenPacket(context.Background(), network, src.String())
		if err != nil {
			return err
		}
		defer c.Close()
		to, err := net.ResolveUDPAddr(network, dst)
		if err != nil {
			return err
		}
		_, err = c.WriteTo(payload, to)
		return err
	})
}

// Datagram is what a UDPRecorder received.
type Datagram struct {
	From    netip.AddrPort
	Payload string
}

// UDPRecorder keeps every datagram a socket receives.
type UDPRecorder struct {
	c    net.PacketConn
	mu   sync.Mutex
	got  []Datagram
	done chan struct{}
}

// RecordUDP listens on addr (e.g. "0.0.0.0:67") in the namespace. With group set (an IPv6
// multicast address) it joins the group on dev and listens on [group]:port instead.
func (n *Netns) RecordUDP(addr, group, dev string) (*UDPRecorder, error) {
	r := &UDPRecorder{done: make(chan struct{})}
	err := n.Do(func() error {
		if group == "" {
			c, err := net.ListenPacket("udp", addr)
			r.c = c
			return err
		}
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		ua, err := net.ResolveUDPAddr("udp6", addr)
		if err != nil {
			return err
		}
		c, err := net.ListenMulticastUDP("udp6", ifi, &net.UDPAddr{IP: net.ParseIP(group), Port: ua.Port})
		r.c = c
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("UDP recorder on %s in %s: %w", addr, n.Name, err)
	}
	go r.loop()
	return r, nil
}

func (r *UDPRecorder) loop() {
	defer close(r.done)
	buf := make([]byte, 2048)
	for {
		k, from, err := r.c.ReadFrom(buf)
		if err != nil {
			return
		}
		ap, _ := netip.ParseAddrPort(from.String())
		r.mu.Lock()
		r.got = append(r.got, Datagram{From: netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), Payload: string(buf[:k])})
		r.mu.Unlock()
	}
}

// Received returns the datagrams so far.
func (r *UDPRecorder) Received() []Datagram {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Datagram(nil), r.got...)
}

// Close stops the recorder.
func (r *UDPRecorder) Close() {
	r.c.Close()
	<-r.done
}

// ServeHTTP runs an HTTP server on addr in the namespace until the returned function is called.
func (n *Netns) ServeHTTP(addr string, h http.Handler) (func(), error) {
	l, err := n.Listen(addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	return func() { srv.Close() }, nil
}

// GratuitousARP broadcasts an ARP request for ip from ip with mac on dev (what a VM does when
// it resumes on another host after a live migration).
func (n *Netns) GratuitousARP(dev string, mac net.HardwareAddr, ip netip.Addr) error {
	return n.Do(func() error {
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, int(htons(syscall.ETH_P_ARP)))
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		bcast := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		frame := append(append(append([]byte{}, bcast...), mac...), 0x08, 0x06) // Ethernet, type ARP
		frame = append(frame, 0, 1, 8, 0, 6, 4, 0, 1)                           // Ethernet/IPv4, request
		ip4 := ip.As4()
		frame = append(append(append(frame, mac...), ip4[:]...), make([]byte, 6)...)
		frame = append(frame, ip4[:]...)
		sa := &syscall.SockaddrLinklayer{Protocol: htons(syscall.ETH_P_ARP), Ifindex: ifi.Index, Halen: 6}
		copy(sa.Addr[:], bcast)
		return syscall.Sendto(fd, frame, 0, sa)
	})
}

func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}
