package kernel

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
)

// Commit sends the batch as one netlink transaction. A batch the encoder
// or the kernel refuses returns a *nft.CommitError; the kernel applied
// nothing of it. The ruleset generation is read before and after: when it
// moved by one, no other commit came in between (CommitInfo.Generation).
func (k *Backend) Commit(ctx context.Context, b *nft.Batch) (nft.CommitInfo, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed.Load() {
		return nft.CommitInfo{}, errClosed
	}
	start := time.Now()
	enc := newEncoder(k.seq+1, b, sizeHint(b))
	enc.encode()
	info := nft.CommitInfo{Messages: len(enc.msgs) - 2, Bytes: len(enc.b.Buf), EncodeTime: time.Since(start)}
	if len(enc.errs) > 0 {
		return info, &nft.CommitError{Objects: enc.errs}
	}
	k.seq += uint32(len(enc.msgs))
	conn, err := k.commitSocket()
	if err != nil {
		return info, err
	}
	dl, ok := ctx.Deadline()
	gen := &reader{conn: conn}
	before, _ := gen.generation() // 0 when unknown
	replies, err := k.exchange(conn, enc, k.deadline(dl, ok))
	if err != nil {
		k.dropSocket()
		return info, err
	}
	if err := replies.commitError(enc); err != nil {
		return info, err
	}
	if after, err := gen.generation(); err == nil && before != 0 && after == before+1 {
		info.Generation = after
	}
	return info, nil
}

// sizeHint guesses the batch's size in bytes.
func sizeHint(b *nft.Batch) int {
	n := 64
	for i := range b.Ops {
		op := &b.Ops[i]
		n += 128 + 64*len(op.Elements) + 96*len(op.MapElements) + 48*len(op.Keys)
		if op.Rule != nil {
			n += 96 * len(op.Rule.Exprs)
		}
	}
	return n
}

// exchange sends the batch in one sendmsg and reads the replies.
func (k *Backend) exchange(conn *netlink.Conn, enc *encoder, deadline time.Time) (*replies, error) {
	rcv := max(1<<20, 64*len(enc.msgs))
	if err := errors.Join(setBuffers(conn, len(enc.b.Buf)+64<<10, rcv), conn.SetDeadline(deadline)); err != nil {
		return nil, err
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	var serr error
	err = raw.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), enc.b.Buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return !errors.Is(serr, unix.EAGAIN)
	})
	if err = errors.Join(err, serr); err != nil {
		return nil, fmt.Errorf("sending a batch of %d bytes: %w", len(enc.b.Buf), err)
	}
	r := &replies{first: enc.base, last: enc.base + uint32(len(enc.msgs)-2)}
	return r, r.read(raw)
}

// replies collects the kernel's answers to one batch.
type replies struct {
	first, last uint32 // sequence numbers of the begin marker and the last operation message
	errs        []kernelError
	done        bool
}

type kernelError struct {
	seq   uint32
	errno syscall.Errno
	msg   string
	off   int // offset of the attribute at fault in the message, -1 if unknown
}

func (r *replies) read(raw syscallConn) error {
	buf := make([]byte, 1<<16)
	for !r.done {
		var n int
		var rerr error
		err := raw.Read(func(fd uintptr) bool {
			n, _, rerr = unix.Recvfrom(int(fd), buf, 0)
			return !errors.Is(rerr, unix.EAGAIN)
		})
		if err = errors.Join(err, rerr); err != nil {
			return fmt.Errorf("reading the kernel's replies: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("parsing the kernel's replies: %w", err)
		}
		for _, m := range msgs {
			r.consume(m)
		}
	}
	return nil
}

type syscallConn interface {
	Read(func(fd uintptr) bool) error
}

// consume records an error or acknowledgement of one of our messages.
func (r *replies) consume(m syscall.NetlinkMessage) {
	if m.Header.Type != unix.NLMSG_ERROR || len(m.Data) < 4+unix.SizeofNlMsghdr {
		return
	}
	errno := -int32(binary.NativeEndian.Uint32(m.Data[:4]))
	seq := binary.NativeEndian.Uint32(m.Data[4+8:])
	if seq-r.first > r.last-r.first {
		return // a reply to an earlier batch
	}
	if errno != 0 {
		ke := kernelError{seq: seq, errno: syscall.Errno(errno), off: -1}
		if m.Header.Flags&unix.NLM_F_ACK_TLVS != 0 {
			ke.msg, ke.off = parseExtAck(m.Data[4+unix.SizeofNlMsghdr:])
		}
		r.errs = append(r.errs, ke)
	}
	r.done = r.done || seq == r.last || (errno != 0 && seq == r.first)
}

// parseExtAck reads the kernel's message and the offset of the attribute
// at fault (native byte order, unlike nf_tables' attributes).
func parseExtAck(b []byte) (string, int) {
	msg, off := "", -1
	for it := nla.NewIter(b); it.Next(); {
		switch it.Type() {
		case unix.NLMSGERR_ATTR_MSG:
			msg = nla.CString(it.Data())
		case unix.NLMSGERR_ATTR_OFFS:
			if d := it.Data(); len(d) >= 4 {
				off = int(binary.NativeEndian.Uint32(d))
			}
		}
	}
	return msg, off
}

// commitError maps the kernel's errors back to the operations, and the
// objects, whose messages it refused.
func (r *replies) commitError(enc *encoder) error {
	if len(r.errs) == 0 {
		return nil
	}
	ce := &nft.CommitError{Kernel: true}
	for _, ke := range r.errs {
		i := int(ke.seq - enc.base)
		msg := enc.msgs[i]
		if msg.op < 0 {
			ce.Err = fmt.Errorf("batch: %w", errWithMsg(ke))
			continue
		}
		op := &enc.ops[msg.op]
		oe := nft.ObjectError{Object: op.Object(), Op: op.Kind, Err: ke.errno, Detail: ke.msg}
		if d, key := elementDetail(enc, op, msg, ke); d != "" {
			oe.Detail, oe.Key = joinDetail(oe.Detail, d), key
		}
		ce.Objects = append(ce.Objects, oe)
	}
	return ce
}

func errWithMsg(ke kernelError) error {
	if ke.msg != "" {
		return fmt.Errorf("%w (%s)", ke.errno, ke.msg)
	}
	return ke.errno
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
