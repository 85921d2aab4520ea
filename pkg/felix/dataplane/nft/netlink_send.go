package nft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// leanSender sends the batch that a google/nftables Conn built, but asks the
// kernel for less in return.
//
// google/nftables sets NLM_F_ACK on every message and NLM_F_ECHO on every
// rule, and Flush then reads one reply at a time. For a big host (36,000
// messages) the kernel builds 36,000 acknowledgements and 29,000 rule
// notifications and Flush needs 77,000 recvmsg calls: 0.4 s on top of the
// 0.6 s the kernel spends applying the batch. leanSender is installed as the
// Conn's dial function (nftables.WithTestDial, the only hook the library
// offers), so conn.Flush() hands it the complete batch. It clears those
// flags, keeps NLM_F_ACK on the last message only, sends the batch in one
// sendmsg on its own socket in the target namespace, and reads the replies
// itself: an error names the failing message by its sequence number.
//
// The socket stays open between commits (commitSocket): closing a netfilter
// netlink socket makes the kernel wait for the release of objects deleted by
// the last commit, an RCU grace period of about 10 ms.
//
// The Conn receives a synthetic acknowledgement for each message it waits
// for; the real outcome is kept in err and returned by failure().
type leanSender struct {
	sock     *commitSocket
	netns    int
	bufSize  int
	deadline time.Time
	splices  map[int][]splice // expressions to put into rule messages (see applySplices)

	sent     bool   // the batch went out
	firstSeq uint32 // sequence number of its first message (the others follow)
	bytes    int
	err      error
	errNo    syscall.Errno
	seq      uint32 // sequence number of the message the kernel refused
}

// fakeAck is what the Conn reads for each of its messages.
var fakeAck = netlink.Message{Header: netlink.Header{Type: netlink.Error}, Data: make([]byte, 20)}

// dial is the nltest function: called with the batch on send, and with nil
// each time the Conn waits for a reply.
func (s *leanSender) dial(reqs []netlink.Message) ([]netlink.Message, error) {
	if reqs != nil {
		if s.sent {
			s.err = errors.New("second send on one batch")
		} else {
			s.err = s.send(reqs)
		}
	}
	return []netlink.Message{fakeAck}, nil
}

func (s *leanSender) send(reqs []netlink.Message) error {
	if len(reqs) < 3 {
		return errors.New("empty batch")
	}
	if err := applySplices(reqs, s.splices); err != nil {
		return err
	}
	conn, err := s.sock.get(s.netns)
	if err != nil {
		return err
	}
	last := len(reqs) - 2 // reqs[0] and reqs[len-1] are the batch begin and end markers
	for i := range reqs {
		reqs[i].Header.Flags &^= netlink.Acknowledge | unix.NLM_F_ECHO
		reqs[i].Header.Sequence = s.sock.nextSeq()
	}
	reqs[last].Header.Flags |= netlink.Acknowledge
	s.sent, s.firstSeq = true, reqs[0].Header.Sequence
	err = s.exchange(conn, reqs)
	if err != nil {
		s.sock.drop() // its state is unknown: replies may still arrive
	}
	return err
}

func (s *leanSender) exchange(conn *netlink.Conn, reqs []netlink.Message) error {
	if err := errors.Join(setBuffers(conn, s.bufSize), conn.SetDeadline(s.deadline)); err != nil {
		return err
	}
	n, err := sendBatch(conn, reqs)
	if err != nil {
		return err
	}
	s.bytes += n
	return s.readReplies(conn, reqs[0].Header.Sequence, reqs[len(reqs)-2].Header.Sequence)
}

// sendBatch writes the messages into one buffer of the exact size and sends it in one sendmsg.
// (netlink.Conn.SendMessages marshals each message into a buffer of its own and appends them
// all to a growing one: for a full sync of a big host that was three copies of a batch of tens
// of megabytes, most of felix's peak memory.)
func sendBatch(conn *netlink.Conn, msgs []netlink.Message) (int, error) {
	size := 0
	for _, m := range msgs {
		size += nlmsgAlign(unix.SizeofNlMsghdr + len(m.Data))
	}
	buf := make([]byte, size)
	off := 0
	for _, m := range msgs {
		n := unix.SizeofNlMsghdr + len(m.Data)
		h := buf[off : off+unix.SizeofNlMsghdr]
		binary.NativeEndian.PutUint32(h[0:4], uint32(n))
		binary.NativeEndian.PutUint16(h[4:6], uint16(m.Header.Type))
		binary.NativeEndian.PutUint16(h[6:8], uint16(m.Header.Flags))
		binary.NativeEndian.PutUint32(h[8:12], m.Header.Sequence)
		binary.NativeEndian.PutUint32(h[12:16], m.Header.PID)
		copy(buf[off+unix.SizeofNlMsghdr:], m.Data)
		off += nlmsgAlign(n)
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	var serr error
	err = raw.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return !errors.Is(serr, unix.EAGAIN)
	})
	if err = errors.Join(err, serr); err != nil {
		return 0, fmt.Errorf("sending the batch: %w", err)
	}
	return size, nil
}

func nlmsgAlign(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }

// readReplies drains the replies: errors for refused messages and the
// acknowledgement of the last one.
func (s *leanSender) readReplies(conn *netlink.Conn, firstSeq, lastSeq uint32) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<16)
	for {
		var n int
		var rerr error
		err := raw.Read(func(fd uintptr) bool {
			n, _, rerr = unix.Recvfrom(int(fd), buf, 0)
			return !errors.Is(rerr, unix.EAGAIN)
		})
		if err = errors.Join(err, rerr); err != nil {
			return fmt.Errorf("reading the kernel's reply: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("parsing the kernel's reply: %w", err)
		}
		if done := s.consume(msgs, firstSeq, lastSeq); done {
			return nil
		}
	}
}

// consume records the first error and reports whether the acknowledgement
// of the last message arrived. Replies to other batches are ignored.
func (s *leanSender) consume(msgs []syscall.NetlinkMessage, firstSeq, lastSeq uint32) bool {
	done := false
	for _, m := range msgs {
		if m.Header.Type != unix.NLMSG_ERROR || len(m.Data) < 4+unix.SizeofNlMsghdr {
			continue
		}
		errno := -int32(binary.NativeEndian.Uint32(m.Data[:4]))
		seq := binary.NativeEndian.Uint32(m.Data[4+8 : 4+12]) // the echoed request header
		if seq-firstSeq > lastSeq-firstSeq {
			continue
		}
		if errno != 0 && s.errNo == 0 {
			s.errNo, s.seq = syscall.Errno(errno), seq
		}
		done = done || seq == lastSeq || errno != 0 && seq == firstSeq
	}
	return done
}

// failure turns a refused message back into the operation that produced it.
func (s *leanSender) failure(tx *Transaction, opEnds []int) error {
	if s.err != nil || s.errNo == 0 {
		return s.err
	}
	msg := int(s.seq - s.firstSeq)            // messages carry consecutive sequence numbers
	op, _ := slices.BinarySearch(opEnds, msg) // message i (1-based after the batch begin) belongs to the first op whose end is >= i
	if msg <= 0 || op >= len(tx.Ops) {
		return fmt.Errorf("kernel refused the batch: %w", s.errNo)
	}
	return fmt.Errorf("kernel refused operation %d (%s): %w", op, tx.Ops[op].brief(), s.errNo)
}

// commitSocket is the netlink socket the lean sender keeps between commits.
type commitSocket struct {
	mu   sync.Mutex
	conn *netlink.Conn
	seq  uint32
}

// get returns the open socket, opening it in netns if needed.
func (c *commitSocket) get(netns int) (*netlink.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		return c.conn, nil
	}
	conn, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: netns})
	if err != nil {
		return nil, fmt.Errorf("opening netlink socket: %w", err)
	}
	// CapAcknowledge: error replies do not copy the whole refused message.
	if err := conn.SetOption(netlink.CapAcknowledge, true); err != nil {
		conn.Close()
		return nil, err
	}
	c.conn = conn
	return conn, nil
}

func (c *commitSocket) nextSeq() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	return c.seq
}

// drop forgets the socket after an error; it is closed in the background
// because the close may wait for the kernel (see leanSender).
func (c *commitSocket) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		go c.conn.Close()
		c.conn = nil
	}
}

func (c *commitSocket) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}
