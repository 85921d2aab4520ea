package nftrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
)

// Trace attributes golang.org/x/sys lacks (enum nft_trace_attributes).
const (
	attrCTStatus = 20 // NFTA_TRACE_CT_STATUS
	attrCTState  = 21 // NFTA_TRACE_CT_STATE
)

// Event is one trace event: a rule that matched (Type
// unix.NFT_TRACETYPE_RULE), a return (NFT_TRACETYPE_RETURN) or a base
// chain's policy (NFT_TRACETYPE_POLICY). The first event of each base
// chain's run carries the packet (headers, interfaces, conntrack).
type Event struct {
	ID           uint32 // the packet's trace id
	Type         uint32
	Family       uint8 // the table's family
	Table, Chain string
	Handle       uint64 // rule handle, when HasHandle
	HasHandle    bool
	Verdict      int32 // NFTA_VERDICT_CODE, when HasVerdict
	VerdictChain string
	HasVerdict   bool
	Policy       uint32 // NF_ACCEPT or NF_DROP (policy events)
	Mark         uint32
	NFProto      uint32
	IIF, OIF     uint32
	Network      []byte // up to 40 bytes of the network header
	Transport    []byte // up to 20 bytes of the transport header
	HasCT        bool   // conntrack state reported
	CTState      uint32
	CTStatus     uint32
}

// Reader receives trace events in one namespace.
type Reader struct {
	conn *netlink.Conn
}

// Listen joins the trace group in the network namespace netns (a
// descriptor).
func Listen(netns int) (*Reader, error) {
	c, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: netns})
	if err != nil {
		return nil, fmt.Errorf("opening netlink socket: %w", err)
	}
	if err := c.JoinGroup(unix.NFNLGRP_NFTRACE); err != nil {
		c.Close()
		return nil, fmt.Errorf("joining the trace group: %w", err)
	}
	if err := c.SetReadBuffer(32 << 20); err != nil {
		c.Close()
		return nil, fmt.Errorf("sizing the receive buffer: %w", err)
	}
	return &Reader{conn: c}, nil
}

// Close closes the socket.
func (r *Reader) Close() error { return r.conn.Close() }

// Drain returns the events received until none came for idle. A lost
// event (the socket's buffer overflowed) is an error.
func (r *Reader) Drain(idle time.Duration) ([]Event, error) {
	var out []Event
	for {
		if err := r.conn.SetReadDeadline(time.Now().Add(idle)); err != nil {
			return nil, err
		}
		msgs, err := r.conn.Receive()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("receiving trace events: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Type != netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8|unix.NFT_MSG_TRACE) || len(m.Data) < 4 {
				continue
			}
			e, err := parse(m.Data)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
	}
}

// parse decodes a trace message: struct nfgenmsg, then attributes.
func parse(b []byte) (Event, error) {
	e := Event{Family: b[0]}
	it := nla.NewIter(b[4:])
	for it.Next() {
		e.attr(&it)
	}
	return e, it.Err()
}

func (e *Event) attr(it *nla.Iter) {
	switch it.Type() {
	case unix.NFTA_TRACE_TABLE:
		e.Table = it.String()
	case unix.NFTA_TRACE_CHAIN:
		e.Chain = it.String()
	case unix.NFTA_TRACE_RULE_HANDLE:
		e.Handle, e.HasHandle = it.U64(), true
	case unix.NFTA_TRACE_TYPE:
		e.Type = it.U32()
	case unix.NFTA_TRACE_VERDICT:
		e.verdict(it.Data())
	case unix.NFTA_TRACE_ID:
		if d := it.Data(); len(d) >= 4 {
			e.ID = binary.NativeEndian.Uint32(d) // nla_put_u32: host order
		}
	case unix.NFTA_TRACE_NETWORK_HEADER:
		e.Network = append([]byte(nil), it.Data()...)
	case unix.NFTA_TRACE_TRANSPORT_HEADER:
		e.Transport = append([]byte(nil), it.Data()...)
	case unix.NFTA_TRACE_IIF:
		e.IIF = it.U32()
	case unix.NFTA_TRACE_OIF:
		e.OIF = it.U32()
	case unix.NFTA_TRACE_MARK:
		e.Mark = it.U32()
	case unix.NFTA_TRACE_NFPROTO:
		e.NFProto = it.U32()
	case unix.NFTA_TRACE_POLICY:
		e.Policy = it.U32()
	case attrCTState:
		e.CTState, e.HasCT = it.U32(), true
	case attrCTStatus:
		e.CTStatus = it.U32()
	}
}

func (e *Event) verdict(b []byte) {
	e.HasVerdict = true
	for it := nla.NewIter(b); it.Next(); {
		switch it.Type() {
		case unix.NFTA_VERDICT_CODE:
			e.Verdict = int32(it.U32())
		case unix.NFTA_VERDICT_CHAIN:
			e.VerdictChain = it.String()
		}
	}
}
