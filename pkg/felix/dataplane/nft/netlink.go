package nft

import (
	"context"
	"errors"
	"fmt"
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
	// 0 means the caller's namespace.
	NetNS int
	// Timeout bounds one Read or Commit when the context has no deadline
	// (default 2 minutes).
	Timeout time.Duration
}

// Netlink is the Kernel that programs nftables through netlink with
// github.com/google/nftables: one batch, one conn.Flush(), per Commit.
type Netlink struct {
	cfg NetlinkConfig
}

// NewNetlink returns a netlink Kernel.
func NewNetlink(cfg NetlinkConfig) *Netlink {
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	return &Netlink{cfg: cfg}
}

// Table is the managed table's name.
func (k *Netlink) Table() string { return k.cfg.Table }

// Commit sends all operations of tx as one netlink batch, which the kernel
// applies atomically.
func (k *Netlink) Commit(ctx context.Context, tx *Transaction) (CommitInfo, error) {
	b := &batch{table: &nftables.Table{Name: k.cfg.Table, Family: nftables.TableFamilyINet}}
	conn, err := nftables.New(k.connOptions(ctx, bufferSize(tx))...)
	if err != nil {
		return CommitInfo{}, fmt.Errorf("opening nftables connection: %w", err)
	}
	b.conn = conn
	for i, op := range tx.Ops {
		if err := b.queue(op); err != nil {
			return CommitInfo{}, fmt.Errorf("encoding operation %d (%s %s): %w", i, op.Kind, op.Name, err)
		}
	}
	info := CommitInfo{Messages: b.messages}
	if err := conn.Flush(); err != nil {
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

func (k *Netlink) connOptions(ctx context.Context, bufSize int) []nftables.ConnOption {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(k.cfg.Timeout)
	}
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

// batch turns operations into google/nftables calls on one Conn.
type batch struct {
	conn     *nftables.Conn
	table    *nftables.Table
	messages int
}

func (b *batch) chain(name string) *nftables.Chain {
	return &nftables.Chain{Name: name, Table: b.table}
}

func (b *batch) set(name string) *nftables.Set {
	return &nftables.Set{Name: name, Table: b.table}
}

func (b *batch) queue(op Op) error {
	b.messages++
	switch op.Kind {
	case OpAddTable:
		b.conn.AddTable(b.table)
	case OpDeleteTable:
		b.conn.DelTable(b.table)
	case OpAddChain:
		b.conn.AddChain(b.nftChain(op.Name, op.Base))
	case OpFlushChain:
		b.conn.FlushChain(b.chain(op.Name))
	case OpDeleteChain:
		b.conn.DelChain(b.chain(op.Name))
	case OpAddRule:
		return b.addRule(op)
	case OpAddSet, OpAddMap:
		return b.addSet(op)
	case OpDeleteSet, OpDeleteMap:
		b.conn.DelSet(b.set(op.Name))
	case OpAddElements, OpDeleteElements, OpAddMapElements, OpDeleteMapElements:
		b.messages--
		return b.elements(op)
	default:
		return fmt.Errorf("unknown operation %d", op.Kind)
	}
	return nil
}

var hookNums = map[Hook]nftables.ChainHook{
	HookPrerouting: unix.NF_INET_PRE_ROUTING, HookInput: unix.NF_INET_LOCAL_IN,
	HookForward: unix.NF_INET_FORWARD, HookOutput: unix.NF_INET_LOCAL_OUT,
	HookPostrouting: unix.NF_INET_POST_ROUTING,
}

func (b *batch) nftChain(name string, base *BaseChain) *nftables.Chain {
	c := b.chain(name)
	if base == nil {
		return c
	}
	policy := nftables.ChainPolicyAccept
	if base.policy() == PolicyDrop {
		policy = nftables.ChainPolicyDrop
	}
	c.Type = nftables.ChainType(base.Type)
	c.Hooknum = nftables.ChainHookRef(hookNums[base.Hook])
	c.Priority = nftables.ChainPriorityRef(nftables.ChainPriority(base.Priority))
	c.Policy = &policy
	return c
}

func (b *batch) addRule(op Op) error {
	enc := newEncoder(func(s *nftables.Set, elems []nftables.SetElement) error {
		s.Table = b.table
		b.messages += 2
		return b.conn.AddSet(s, elems)
	})
	for _, x := range op.Rule.Exprs {
		x.encode(enc)
	}
	if enc.err != nil {
		return enc.err
	}
	b.conn.AddRule(&nftables.Rule{
		Table:    b.table,
		Chain:    b.chain(op.Name),
		Exprs:    enc.exprs,
		UserData: ruleUserData(kernelComment(op.Hash, op.Rule)),
	})
	return nil
}

func (b *batch) addSet(op Op) error {
	t, err := parseSetType(op.Type)
	if err != nil {
		return err
	}
	s := &nftables.Set{
		Table:         b.table,
		Name:          op.Name,
		KeyType:       t.nftType(),
		Interval:      op.Interval,
		Concatenation: t.concat(),
		KeyByteOrder:  t.byteOrder(),
	}
	if op.Kind == OpAddMap {
		s.IsMap, s.DataType = true, nftables.TypeVerdict
	}
	return b.conn.AddSet(s, nil)
}

// maxElemBytes bounds the element list of one message: it is one netlink
// attribute, whose length is 16 bits.
const maxElemBytes = 32 << 10

// elements sends element operations in as many messages as needed, all in
// the same batch.
func (b *batch) elements(op Op) error {
	var elems []nftables.SetElement
	size := 0
	flush := func() error {
		if len(elems) == 0 {
			return nil
		}
		b.messages++
		var err error
		if op.Kind == OpAddElements || op.Kind == OpAddMapElements {
			err = b.conn.SetAddElements(b.set(op.Name), elems)
		} else {
			err = b.conn.SetDeleteElements(b.set(op.Name), elems)
		}
		elems, size = nil, 0
		return err
	}
	for _, e := range nftElements(op) {
		if size > maxElemBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		elems = append(elems, e...)
		for _, x := range e {
			size += 48 + len(x.Key) + len(x.KeyEnd)
			if x.VerdictData != nil {
				size += 24 + len(x.VerdictData.Chain)
			}
		}
	}
	return flush()
}

// nftElements converts an operation's elements; each entry holds the
// kernel elements of one of ours (an interval's start and end stay together).
func nftElements(op Op) [][]nftables.SetElement {
	var out [][]nftables.SetElement
	for _, e := range op.Elements {
		out = append(out, setElements([]element{e}, op.Interval))
	}
	for _, e := range op.MapElems {
		el := nftables.SetElement{Key: e.key}
		if op.Kind == OpAddMapElements {
			el.VerdictData = e.verdict.nft()
		}
		out = append(out, []nftables.SetElement{el})
	}
	return out
}
