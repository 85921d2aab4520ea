package nft

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// NetlinkConfig configures the netlink Kernel.
type NetlinkConfig struct {
	// Table is the inet table to manage (default DefaultTable).
	Table string
	// NetNS is an open file descriptor of the network namespace to program;
	// 0 means the caller's namespace. NewNetlink takes its own duplicate, so
	// the caller may close its descriptor at any time.
	NetNS int
	// Timeout bounds one Read or Commit when the context has no deadline
	// (default 2 minutes).
	Timeout time.Duration
	// PerMessageAcks sends the batch over google/nftables' own socket, which
	// asks the kernel to acknowledge every message and to echo every rule
	// back. By default the batch goes out with a single acknowledgement
	// request on its last message (see leanSender), which makes big commits
	// about 40% faster. It cannot send MasqueradeToPorts (see splice): a
	// transaction with one fails. For tests and benchmarks.
	PerMessageAcks bool
}

// Netlink is the Kernel that programs nftables through netlink with
// github.com/google/nftables: every Commit builds one batch on one
// nftables.Conn and sends it with one conn.Flush(); the kernel applies it
// atomically.
type Netlink struct {
	cfg    NetlinkConfig // NetNS is our own duplicate descriptor (see openTarget)
	err    error         // the namespace cannot be used: every Read and Commit fails
	closed atomic.Bool
	commit sync.Mutex // one Commit at a time on the shared socket
	sock   commitSocket
}

// NewNetlink returns a netlink Kernel.
func NewNetlink(cfg NetlinkConfig) *Netlink {
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	k := &Netlink{cfg: cfg}
	k.cfg.NetNS, k.err = openTarget(cfg.NetNS)
	return k
}

// usable reports why the kernel cannot be used, if it cannot.
func (k *Netlink) usable() error {
	if k.closed.Load() {
		return errClosed
	}
	return k.err
}

// Table is the managed table's name.
func (k *Netlink) Table() string { return k.cfg.Table }

// Close releases the netlink socket kept open between commits and the
// namespace descriptor; Read and Commit fail afterwards.
func (k *Netlink) Close() error {
	k.commit.Lock()
	defer k.commit.Unlock()
	if k.closed.Swap(true) {
		return nil
	}
	err := k.sock.close()
	if k.cfg.NetNS > 0 {
		err = errors.Join(err, unix.Close(k.cfg.NetNS))
	}
	return err
}

// Commit sends all operations of tx as one netlink batch, which the kernel
// applies atomically.
func (k *Netlink) Commit(ctx context.Context, tx *Transaction) (CommitInfo, error) {
	k.commit.Lock()
	defer k.commit.Unlock()
	if err := k.usable(); err != nil {
		return CommitInfo{}, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(k.cfg.Timeout)
	}
	opts := k.connOptions(deadline, bufferSize(tx))
	var lean *leanSender
	if !k.cfg.PerMessageAcks {
		lean = &leanSender{sock: &k.sock, netns: k.cfg.NetNS, bufSize: bufferSize(tx), deadline: deadline}
		opts = []nftables.ConnOption{nftables.WithTestDial(lean.dial)}
	}
	conn, err := nftables.New(opts...)
	if err != nil {
		return CommitInfo{}, fmt.Errorf("opening nftables connection: %w", err)
	}
	start := time.Now()
	b := &batch{conn: conn, table: &nftables.Table{Name: k.cfg.Table, Family: nftables.TableFamilyINet}}
	for i, op := range tx.Ops {
		if err := b.queue(op); err != nil {
			return CommitInfo{}, fmt.Errorf("encoding operation %d (%s %s): %w", i, op.Kind, op.Name, err)
		}
		b.opEnds = append(b.opEnds, b.messages)
	}
	info := CommitInfo{Messages: b.messages, EncodeTime: time.Since(start)}
	if len(b.splices) > 0 && lean == nil {
		return info, errors.New("masquerade to a port range needs the lean sender (NetlinkConfig.PerMessageAcks is set)")
	}
	if lean != nil {
		lean.splices = b.splices
	}
	err = conn.Flush()
	if lean != nil {
		info.Bytes = lean.bytes
		if err == nil {
			err = lean.failure(tx, b.opEnds)
		}
	}
	if err != nil {
		return info, fmt.Errorf("sending batch of %d messages: %w", b.messages, err)
	}
	return info, nil
}

// bufferSize estimates the socket buffers a transaction needs. The whole
// batch goes out in one sendmsg, and every message is acknowledged (rules
// are also echoed back) before we read anything, so both directions must
// hold the whole transaction.
func bufferSize(tx *Transaction) int {
	n := 1 << 20
	for _, op := range tx.Ops {
		n += 2048 + 96*(len(op.Elements)+len(op.MapElems))
	}
	return n
}

func (k *Netlink) connOptions(deadline time.Time, bufSize int) []nftables.ConnOption {
	opts := []nftables.ConnOption{nftables.WithSockOptions(
		func(c *netlink.Conn) error { return setBuffers(c, bufSize) },
		func(c *netlink.Conn) error { return c.SetDeadline(deadline) },
	)}
	if k.cfg.NetNS != 0 {
		opts = append(opts, nftables.WithNetNSFd(k.cfg.NetNS))
	}
	return opts
}

// setBuffers raises the socket's send and receive buffers, beyond the
// sysctl limits when we have CAP_NET_ADMIN.
func setBuffers(c *netlink.Conn, size int) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		for _, opt := range [][2]int{{unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}, {unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}} {
			e := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt[0], size)
			if errors.Is(e, syscall.EPERM) {
				e = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt[1], size)
			}
			if e != nil && serr == nil {
				serr = fmt.Errorf("setting netlink socket buffer: %w", e)
			}
		}
	})
	return errors.Join(err, serr)
}
