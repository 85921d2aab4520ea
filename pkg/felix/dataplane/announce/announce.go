package announce

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

const (
	etherTypeARP  = 0x0806
	etherTypeRARP = 0x8035
	ethHeaderLen  = 14
)

// IsAnnouncement reports whether an Ethernet frame is a RARP frame or a gratuitous ARP, as
// Project Calico's felix classifies them (untagged frames only).
func IsAnnouncement(frame []byte) bool {
	if len(frame) < ethHeaderLen {
		return false
	}
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case etherTypeRARP:
		return true
	case etherTypeARP:
		arp := frame[ethHeaderLen:]
		if len(arp) < 8 {
			return false
		}
		hlen, plen := int(arp[4]), int(arp[5])
		if plen == 0 || len(arp) < 8+2*hlen+2*plen {
			return false
		}
		spa := arp[8+hlen : 8+hlen+plen]
		tpa := arp[8+2*hlen+plen : 8+2*hlen+2*plen]
		return bytes.Equal(spa, tpa)
	}
	return false
}

// filter is a classic BPF program accepting only ARP and RARP frames.
var filter = []unix.SockFilter{
	{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 12},
	{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 2, K: etherTypeARP},
	{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, K: etherTypeRARP},
	{Code: unix.BPF_RET | unix.BPF_K, K: 0},
	{Code: unix.BPF_RET | unix.BPF_K, K: 0xffff},
}

// Watch opens a packet socket on iface in the network namespace at nsPath ("" = the current
// one) and calls found, once, from its own goroutine when a frame received on the interface is
// an announcement. Closing the returned Closer stops watching; found is then not called.
func Watch(nsPath, iface string, found func()) (io.Closer, error) {
	fd, err := openIn(nsPath, iface)
	if err != nil {
		return nil, fmt.Errorf("watching %s for announcements: %w", iface, err)
	}
	f := os.NewFile(uintptr(fd), "packet:"+iface)
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("watching %s for announcements: %w", iface, err)
	}
	go func() {
		if read(rc) {
			found()
		}
	}()
	return f, nil
}

// read reads frames until one received (not sent) on the interface is an announcement (true)
// or the socket is closed (false).
func read(rc interface {
	Read(func(uintptr) bool) error
}) bool {
	buf := make([]byte, 2048)
	for {
		var n int
		var from unix.Sockaddr
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, from, rerr = unix.Recvfrom(int(fd), buf, 0)
			return !errors.Is(rerr, unix.EAGAIN)
		})
		// ENETDOWN: the interface went down; the socket reads again once it is up.
		if err != nil || (rerr != nil && !errors.Is(rerr, unix.EINTR) && !errors.Is(rerr, unix.ENETDOWN)) {
			return false
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if rerr == nil && IsAnnouncement(buf[:n]) {
			return true
		}
	}
}

// openIn makes the non-blocking, filtered packet socket bound to iface, on a thread switched into
// the namespace so that the socket and the interface lookup belong to it.
func openIn(nsPath, iface string) (int, error) {
	if nsPath == "" {
		return openSocket(iface)
	}
	target, err := netns.GetFromPath(nsPath)
	if err != nil {
		return -1, fmt.Errorf("opening namespace %s: %w", nsPath, err)
	}
	defer target.Close()
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return -1, err
	}
	defer orig.Close()
	if err := netns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return -1, fmt.Errorf("entering namespace %s: %w", nsPath, err)
	}
	fd, err := openSocket(iface)
	if netns.Set(orig) == nil {
		runtime.UnlockOSThread() // else the thread dies with the goroutine, never reused elsewhere
	}
	return fd, err
}

func openSocket(iface string) (int, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return -1, err
	}
	// Protocol 0 receives nothing until bind names the protocol and the interface, so no frame of
	// another interface can be queued in between.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return -1, fmt.Errorf("packet socket: %w", err)
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("attaching filter: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("binding to %s: %w", iface, err)
	}
	return fd, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
