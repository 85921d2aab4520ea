package kernel

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

var errGenerationChanged = errors.New("the ruleset changed during the read")

// Read dumps the tables among ids that exist and decodes them into the
// typed model. The dumps are repeated when the ruleset generation changed
// while they ran; after three tries the last read is used anyway (a full
// sync repairs from it and the next one corrects what it missed).
func (k *Backend) Read(ctx context.Context, ids []nft.TableID, opts nft.ReadOptions) ([]*nft.Table, error) {
	var tables []*nft.Table
	var err error
	for range 3 {
		tables, err = k.readOnce(ctx, ids, opts)
		if !errors.Is(err, errGenerationChanged) {
			return tables, err
		}
	}
	return tables, nil
}

// Generation reads the ruleset generation of the namespace.
func (k *Backend) Generation(ctx context.Context) (uint32, error) {
	r, err := k.openReader(ctx)
	if err != nil {
		return 0, err
	}
	defer r.close()
	return r.generation()
}

func (k *Backend) readOnce(ctx context.Context, ids []nft.TableID, opts nft.ReadOptions) ([]*nft.Table, error) {
	r, err := k.openReader(ctx)
	if err != nil {
		return nil, err
	}
	defer r.close()
	r.skip, r.setsOnly = opts.SkipElements, opts.SetsOnly
	if opts.SetsOnly {
		r.skip = func(nft.TableID, string) bool { return true }
	}
	gen, err := r.generation()
	if err != nil {
		return nil, err
	}
	var out []*nft.Table
	for _, id := range ids {
		t, err := r.table(id)
		if err != nil {
			return nil, fmt.Errorf("reading table %s: %w", id, err)
		}
		if t != nil {
			out = append(out, t)
		}
	}
	gen2, err := r.generation()
	if err == nil && (gen2 != gen || r.interrupted) {
		err = errGenerationChanged
	}
	return out, err
}

// reader runs netlink requests.
type reader struct {
	conn        *netlink.Conn
	interrupted bool // a dump was interrupted by a concurrent change
	seq         uint32
	buf         []byte                                   // dump receive buffer
	skip        func(table nft.TableID, set string) bool // sets whose elements are not read (nil: none)
	setsOnly    bool                                     // read the sets' declarations only
	tableHandle uint64                                   // the kernel's handle of the table being read
}

// openReader opens a socket for reads that ends at ctx's deadline (without one, after the
// backend's timeout).
func (k *Backend) openReader(ctx context.Context) (*reader, error) {
	conn, err := k.dial()
	if err != nil {
		return nil, err
	}
	dl, ok := ctx.Deadline()
	if err := conn.SetDeadline(k.deadline(dl, ok)); err != nil {
		conn.Close()
		return nil, err
	}
	return &reader{conn: conn}, nil
}

func (r *reader) close() { r.conn.Close() }

func (r *reader) request(m int, fam nft.Family, dump bool, attrs func(b *nla.Builder)) ([]netlink.Message, error) {
	var b nla.Builder
	b.Buf = []byte{byte(fam), unix.NFNETLINK_V0, 0, 0}
	if attrs != nil {
		attrs(&b)
	}
	flags := netlink.Request
	if dump {
		flags |= netlink.Dump
	}
	msgs, err := r.conn.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(nftMsg(m)), Flags: flags},
		Data:   b.Buf,
	})
	for _, msg := range msgs {
		if msg.Header.Flags&netlink.DumpInterrupted != 0 {
			r.interrupted = true
		}
	}
	return msgs, err
}

// attrs returns a message's attributes (after the nfgenmsg header).
func attrs(m netlink.Message) []byte {
	if len(m.Data) < 4 {
		return nil
	}
	return m.Data[4:]
}

func (r *reader) generation() (uint32, error) {
	msgs, err := r.request(unix.NFT_MSG_GETGEN, unix.AF_UNSPEC, false, nil)
	if err != nil {
		return 0, fmt.Errorf("reading the ruleset generation: %w", err)
	}
	for _, m := range msgs {
		if d, ok := nla.Find(attrs(m), unix.NFTA_GEN_ID); ok && len(d) == 4 {
			return uint32(d[0])<<24 | uint32(d[1])<<16 | uint32(d[2])<<8 | uint32(d[3]), nil
		}
	}
	return 0, errors.New("no ruleset generation in the reply")
}

// table reads one table; nil when it does not exist.
func (r *reader) table(id nft.TableID) (*nft.Table, error) {
	msgs, err := r.request(unix.NFT_MSG_GETTABLE, id.Family, false, func(b *nla.Builder) {
		b.String(unix.NFTA_TABLE_NAME, id.Name)
	})
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r.tableHandle = 0
	for _, m := range msgs {
		if d, ok := nla.Find(attrs(m), attrTableHandle); ok && len(d) == 8 {
			r.tableHandle = binary.BigEndian.Uint64(d)
		}
	}
	t := nft.NewTable(id.Family, id.Name)
	anon, err := r.sets(t)
	if err != nil || r.setsOnly {
		return t, err
	}
	chains, err := r.chains(t)
	if err != nil {
		return nil, err
	}
	if err := r.rules(t, chains, anon); err != nil {
		return nil, err
	}
	for _, c := range chains {
		t.InsertChain(c)
	}
	return t, nil
}

func (r *reader) chains(t *nft.Table) (map[string]*nft.Chain, error) {
	out := map[string]*nft.Chain{}
	err := r.dump(unix.NFT_MSG_GETCHAIN, t.Family, nil, func(b []byte) error {
		c, table := decodeChain(t.Family, b)
		if table == t.Name && c.Name != "" {
			out[c.Name] = c
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing chains: %w", err)
	}
	return out, nil
}

func decodeChain(fam nft.Family, b []byte) (*nft.Chain, string) {
	c := &nft.Chain{}
	base := &nft.BaseChain{Policy: nft.PolicyAccept}
	var table string
	hooked := false
	for it := nla.NewIter(b); it.Next(); {
		switch it.Type() {
		case unix.NFTA_CHAIN_NAME:
			c.Name = it.String()
		case unix.NFTA_CHAIN_TABLE:
			table = it.String()
		case unix.NFTA_CHAIN_TYPE:
			base.Type = nft.ChainType(it.String())
		case unix.NFTA_CHAIN_POLICY:
			if it.U32() == nfDrop {
				base.Policy = nft.PolicyDrop
			}
		case unix.NFTA_CHAIN_HOOK:
			hooked = true
			decodeHook(fam, base, it.Data())
		}
	}
	if hooked {
		c.Base = base
	}
	return c, table
}

func decodeHook(fam nft.Family, base *nft.BaseChain, b []byte) {
	for it := nla.NewIter(b); it.Next(); {
		switch it.Type() {
		case unix.NFTA_HOOK_HOOKNUM:
			h, ok := nft.HookByNumber(fam, it.U32())
			if !ok {
				h = nft.Hook(fmt.Sprintf("hook%d", it.U32()))
			}
			base.Hook = h
		case unix.NFTA_HOOK_PRIORITY:
			base.Priority = int32(it.U32())
		case unix.NFTA_HOOK_DEV:
			base.Device = it.String()
		}
	}
}

func (r *reader) rules(t *nft.Table, chains map[string]*nft.Chain, anon map[string]nft.AnonSet) error {
	resolve := func(name string) (nft.AnonSet, bool) { s, ok := anon[name]; return s, ok }
	err := r.ruleDump(t.ID(), func(b []byte) error {
		chain, table, rule := decodeRule(t.Family, b, resolve)
		if c := chains[chain]; c != nil && table == t.Name {
			c.Rules = append(c.Rules, rule)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing rules: %w", err)
	}
	return nil
}

func decodeRule(fam nft.Family, b []byte, anon func(string) (nft.AnonSet, bool)) (chain, table string, rule nft.Rule) {
	for it := nla.NewIter(b); it.Next(); {
		switch it.Type() {
		case unix.NFTA_RULE_TABLE:
			table = it.String()
		case unix.NFTA_RULE_CHAIN:
			chain = it.String()
		case unix.NFTA_RULE_EXPRESSIONS:
			exprs, err := vm.Unmarshal(it.Data())
			if err != nil {
				rule.Exprs = []nft.Expr{nft.Undecoded{Reason: err.Error()}}
				continue
			}
			rule.Exprs, _ = nft.RaiseRule(fam, exprs, anon)
		case unix.NFTA_RULE_USERDATA:
			rule.Comment = ruleComment(it.Data())
		}
	}
	return chain, table, rule
}

// ruleComment reads the comment from a rule's userdata (type, length,
// value records).
func ruleComment(ud []byte) string {
	for len(ud) >= 2 {
		typ, n := ud[0], int(ud[1])
		if len(ud) < 2+n {
			return ""
		}
		if typ == udataRuleComment {
			return nla.CString(ud[2 : 2+n])
		}
		ud = ud[2+n:]
	}
	return ""
}
