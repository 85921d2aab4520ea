package policydiff

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

// Packets leave a namespace through an AF_PACKET socket on eth0, addressed to the next hop's MAC
// (so the sending namespace's own routing and netfilter play no part), and are seen arriving by
// another AF_PACKET socket on the destination's eth0, whether or not its stack accepts them.

func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// sender sends IP packets out of one interface to one MAC.
type sender struct {
	fd      int
	ifindex int
	gw      net.HardwareAddr
	mu      sync.Mutex
}

func newSender(ns *topo.Netns, dev string, gw net.HardwareAddr) (*sender, error) {
	s := &sender{gw: gw, fd: -1}
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		s.ifindex = ifi.Index
		s.fd, err = syscall.Socket(syscall.AF_PACKET, syscall.SOCK_DGRAM, 0)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("packet socket in %s: %w", ns.Name, err)
	}
	return s, nil
}

func (s *sender) Send(pkt []byte) error {
	proto := uint16(syscall.ETH_P_IP)
	if pkt[0]>>4 == 6 {
		proto = syscall.ETH_P_IPV6
	}
	sa := &syscall.SockaddrLinklayer{Protocol: htons(proto), Ifindex: s.ifindex, Halen: 6}
	copy(sa.Addr[:], s.gw)
	s.mu.Lock()
	defer s.mu.Unlock()
	return syscall.Sendto(s.fd, pkt, 0, sa)
}

func (s *sender) Close() {
	if s.fd >= 0 {
		syscall.Close(s.fd)
	}
}

// arrival identifies a received probe.
type arrival struct {
	ns  string
	pkt parsed
}

// receiver records every tagged packet arriving in the namespaces it listens in.
type receiver struct {
	mu   sync.Mutex
	got  map[arrival]bool
	stop atomic.Bool
	wg   sync.WaitGroup
	fds  []int
}

func newReceiver() *receiver { return &receiver{got: map[arrival]bool{}} }

// Listen starts recording packets arriving on dev in ns, under name.
func (r *receiver) Listen(ns *topo.Netns, name, dev string) error {
	var fd int
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		fd, err = syscall.Socket(syscall.AF_PACKET, syscall.SOCK_DGRAM, int(htons(syscall.ETH_P_ALL)))
		if err != nil {
			return err
		}
		tv := syscall.Timeval{Usec: 200000}
		if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
			syscall.Close(fd)
			return err
		}
		if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<20); err != nil {
			syscall.Close(fd)
			return err
		}
		return syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: htons(syscall.ETH_P_ALL), Ifindex: ifi.Index})
	})
	if err != nil {
		return fmt.Errorf("capture socket in %s: %w", ns.Name, err)
	}
	r.fds = append(r.fds, fd)
	r.wg.Add(1)
	go r.loop(fd, name)
	return nil
}

func (r *receiver) loop(fd int, name string) {
	defer r.wg.Done()
	buf := make([]byte, 4096)
	for !r.stop.Load() {
		n, from, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			continue // timeout: check stop
		}
		if ll, ok := from.(*syscall.SockaddrLinklayer); ok && ll.Pkttype == syscall.PACKET_OUTGOING {
			continue
		}
		if p, ok := parsePacket(buf[:n]); ok {
			r.mu.Lock()
			r.got[arrival{ns: name, pkt: p}] = true
			r.mu.Unlock()
		}
	}
}

// Arrived reports whether the tagged packet reached namespace ns.
func (r *receiver) Arrived(ns string, p Packet, tag uint32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[arrival{ns: ns, pkt: parsed{Src: p.Src, Dst: p.Dst, Proto: p.Proto, Tag: tag}}]
}

func (r *receiver) Close() {
	r.stop.Store(true)
	r.wg.Wait()
	for _, fd := range r.fds {
		syscall.Close(fd)
	}
}
