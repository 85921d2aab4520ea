package kernel

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Config configures the backend.
type Config struct {
	// NetNS is an open descriptor of the network namespace to program; 0
	// is the caller's own. New takes its own duplicate, so the caller may
	// close its descriptor at any time.
	NetNS int
	// Timeout bounds one Read or Commit when the context has no deadline
	// (default 2 minutes).
	Timeout time.Duration
}

// Backend programs nf_tables in one network namespace.
type Backend struct {
	netns   int
	timeout time.Duration
	closed  atomic.Bool
	mu      sync.Mutex // one Commit at a time on the kept socket
	sock    *netlink.Conn
	seq     uint32
}

// New returns a backend for the namespace cfg.NetNS.
func New(cfg Config) (*Backend, error) {
	fd, err := openTarget(cfg.NetNS)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	return &Backend{netns: fd, timeout: cfg.Timeout}, nil
}

var errClosed = errors.New("the kernel backend is closed")

// Close releases the socket and the namespace descriptor.
func (k *Backend) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed.Swap(true) {
		return nil
	}
	var err error
	if k.sock != nil {
		err = k.sock.Close()
		k.sock = nil
	}
	if k.netns > 0 {
		err = errors.Join(err, unix.Close(k.netns))
	}
	return err
}

func (k *Backend) deadline(dl time.Time, ok bool) time.Time {
	if ok {
		return dl
	}
	return time.Now().Add(k.timeout)
}

// dial opens a netfilter netlink socket in the namespace.
func (k *Backend) dial() (*netlink.Conn, error) {
	if k.closed.Load() {
		return nil, errClosed
	}
	conn, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: k.netns})
	if err != nil {
		return nil, fmt.Errorf("opening netlink socket: %w", err)
	}
	return conn, nil
}

// commitSocket returns the socket kept for commits. Keeping it open saves
// the kernel's wait for the release of objects deleted by the last commit
// (an RCU grace period, about 10 ms) that closing it would cost.
func (k *Backend) commitSocket() (*netlink.Conn, error) {
	if k.sock != nil {
		return k.sock, nil
	}
	conn, err := k.dial()
	if err != nil {
		return nil, err
	}
	// CapAcknowledge: errors do not copy the refused message back.
	// ExtendedAcknowledge: errors carry the kernel's message and the offset
	// of the attribute at fault.
	for _, o := range []netlink.ConnOption{netlink.CapAcknowledge, netlink.ExtendedAcknowledge} {
		if err := conn.SetOption(o, true); err != nil {
			conn.Close()
			return nil, fmt.Errorf("setting netlink socket option: %w", err)
		}
	}
	k.sock = conn
	return conn, nil
}

// dropSocket forgets the kept socket after an error (replies to the batch
// may still be queued on it); it is closed in the background because the
// close may wait for the kernel.
func (k *Backend) dropSocket() {
	if k.sock != nil {
		go k.sock.Close()
		k.sock = nil
	}
}

// setBuffers sizes the socket's send and receive buffers, beyond the sysctl
// limits when we have CAP_NET_ADMIN (SO_*BUFFORCE).
func setBuffers(c *netlink.Conn, snd, rcv int) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		for _, o := range []struct{ force, plain, size int }{
			{unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, snd}, {unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, rcv},
		} {
			e := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, o.force, o.size)
			if errors.Is(e, syscall.EPERM) {
				e = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, o.plain, o.size)
			}
			if e != nil && serr == nil {
				serr = fmt.Errorf("setting netlink socket buffer: %w", e)
			}
		}
	})
	return errors.Join(err, serr)
}
