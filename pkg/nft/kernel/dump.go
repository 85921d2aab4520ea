package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
)

// dumpBufSize is the receive buffer of a dump. The kernel sizes each dump
// message by the largest buffer the reader has offered (up to 32 KiB), and
// the rbtree and hash set backends restart their walk from the first
// element for every message, so a big buffer makes reading a big set
// several times faster.
const dumpBufSize = 64 << 10

// dump runs a dump request and calls fn with the attributes of each reply
// message, as they arrive (nothing is kept).
func (r *reader) dump(m int, fam nft.Family, attrs func(b *nla.Builder), fn func(attrs []byte) error) error {
	raw, err := r.conn.SyscallConn()
	if err != nil {
		return err
	}
	r.seq++
	req := dumpRequest(m, fam, r.seq, attrs)
	var serr error
	err = raw.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return !errors.Is(serr, unix.EAGAIN)
	})
	if err = errors.Join(err, serr); err != nil {
		return fmt.Errorf("sending a dump request: %w", err)
	}
	if r.buf == nil {
		r.buf = make([]byte, dumpBufSize)
	}
	for {
		done, err := r.receive(raw, fn)
		if done || err != nil {
			return err
		}
	}
}

func dumpRequest(m int, fam nft.Family, seq uint32, attrs func(b *nla.Builder)) []byte {
	var b nla.Builder
	b.Buf = make([]byte, unix.SizeofNlMsghdr, 256)
	binary.NativeEndian.PutUint16(b.Buf[4:], nftMsg(m))
	binary.NativeEndian.PutUint16(b.Buf[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(b.Buf[8:], seq)
	b.Buf = append(b.Buf, byte(fam), unix.NFNETLINK_V0, 0, 0)
	if attrs != nil {
		attrs(&b)
	}
	binary.NativeEndian.PutUint32(b.Buf, uint32(len(b.Buf)))
	return b.Buf
}

// receive reads one datagram of the dump; done at NLMSG_DONE.
func (r *reader) receive(raw syscallConn, fn func([]byte) error) (bool, error) {
	var n int
	var rerr error
	err := raw.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), r.buf, 0)
		return !errors.Is(rerr, unix.EAGAIN)
	})
	if err = errors.Join(err, rerr); err != nil {
		return false, fmt.Errorf("reading a dump: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(r.buf[:n])
	if err != nil {
		return false, fmt.Errorf("parsing a dump: %w", err)
	}
	for _, m := range msgs {
		if m.Header.Seq != r.seq {
			continue
		}
		if m.Header.Flags&unix.NLM_F_DUMP_INTR != 0 {
			r.interrupted = true
		}
		switch m.Header.Type {
		case unix.NLMSG_DONE:
			return true, nil
		case unix.NLMSG_ERROR:
			if errno := -int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 {
				return true, syscall.Errno(errno)
			}
			return true, nil
		}
		if len(m.Data) >= 4 {
			if err := fn(m.Data[4:]); err != nil {
				return true, err
			}
		}
	}
	return false, nil
}
