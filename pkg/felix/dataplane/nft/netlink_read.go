package nft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Read dumps our table straight from netlink. It decodes only what the
// Applier needs — chain hooks, rule handles and hash comments, set types
// and elements, map verdicts — and never the rule expressions, so rules it
// could not decode cannot make it fail. (google/nftables v0.3.0 cannot
// decode verdict map elements, hence this small reader.) The dumps are
// repeated if the ruleset generation changed while they ran (any table's
// change does that). After a few tries the last read is used anyway: the
// Applier tolerates a slightly stale view (see planner.planChains), and
// the next full sync corrects what it missed.
func (k *Netlink) Read(ctx context.Context) (*KernelState, error) {
	if err := k.usable(); err != nil {
		return nil, err
	}
	var ks *KernelState
	var err error
	for range 3 {
		ks, err = k.readOnce(ctx)
		if !errors.Is(err, errGenerationChanged) {
			return ks, err
		}
	}
	if ks != nil {
		return ks, nil
	}
	return nil, err
}

var errGenerationChanged = errors.New("nftables ruleset changed during the read")

func (k *Netlink) readOnce(ctx context.Context) (*KernelState, error) {
	conn, err := netlink.Dial(unix.NETLINK_NETFILTER, &netlink.Config{NetNS: k.cfg.NetNS})
	if err != nil {
		return nil, fmt.Errorf("opening netlink socket: %w", err)
	}
	defer conn.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(k.cfg.Timeout)
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, err
	}
	r := &reader{conn: conn, table: k.cfg.Table}
	gen, err := r.generation()
	if err != nil {
		return nil, err
	}
	ks, err := r.readTable()
	if err != nil {
		return nil, err
	}
	gen2, err := r.generation()
	if err != nil {
		return nil, err
	}
	if gen2 != gen || r.interrupted {
		return ks, errGenerationChanged
	}
	return ks, nil
}

// reader runs netlink requests for one table.
type reader struct {
	conn        *netlink.Conn
	table       string
	interrupted bool // a dump was interrupted by a concurrent change
}

func (r *reader) request(msgType int, dump bool, attrs ...netlink.Attribute) ([]netlink.Message, error) {
	data, err := netlink.MarshalAttributes(attrs)
	if err != nil {
		return nil, err
	}
	flags := netlink.Request
	if dump {
		flags |= netlink.Dump
	}
	msgs, err := r.conn.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | msgType), Flags: flags},
		Data:   append([]byte{unix.NFPROTO_INET, unix.NFNETLINK_V0, 0, 0}, data...),
	})
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if m.Header.Flags&netlink.DumpInterrupted != 0 {
			r.interrupted = true
		}
	}
	return msgs, nil
}

func strAttr(typ uint16, s string) netlink.Attribute {
	return netlink.Attribute{Type: typ, Data: append([]byte(s), 0)}
}

// generation returns the ruleset generation id.
func (r *reader) generation() (uint32, error) {
	msgs, err := r.request(unix.NFT_MSG_GETGEN, false)
	if err != nil {
		return 0, fmt.Errorf("reading nftables generation: %w", err)
	}
	for _, m := range msgs {
		var gen uint32
		err := decodeAttrs(m, func(ad *netlink.AttributeDecoder) {
			if ad.Type() == unix.NFTA_GEN_ID {
				gen = ad.Uint32()
			}
		})
		if err == nil && gen != 0 {
			return gen, nil
		}
	}
	return 0, errors.New("no nftables generation in reply")
}

// decodeAttrs walks the attributes after the nfgenmsg header.
func decodeAttrs(m netlink.Message, fn func(*netlink.AttributeDecoder)) error {
	if len(m.Data) < 4 {
		return errors.New("short nftables message")
	}
	ad, err := netlink.NewAttributeDecoder(m.Data[4:])
	if err != nil {
		return err
	}
	ad.ByteOrder = binary.BigEndian
	for ad.Next() {
		fn(ad)
	}
	return ad.Err()
}

func (r *reader) readTable() (*KernelState, error) {
	ks := newKernelState()
	_, err := r.request(unix.NFT_MSG_GETTABLE, false, strAttr(unix.NFTA_TABLE_NAME, r.table))
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) {
		return ks, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading table %s: %w", r.table, err)
	}
	ks.TableExists = true
	for _, step := range []func(*KernelState) error{r.readChains, r.readRules, r.readSets} {
		if err := step(ks); err != nil {
			return nil, err
		}
	}
	return ks, nil
}

func (r *reader) readChains(ks *KernelState) error {
	msgs, err := r.request(unix.NFT_MSG_GETCHAIN, true, strAttr(unix.NFTA_CHAIN_TABLE, r.table))
	if err != nil {
		return fmt.Errorf("listing chains: %w", err)
	}
	for _, m := range msgs {
		name, table, c, err := decodeChain(m)
		if err != nil {
			return fmt.Errorf("decoding chain: %w", err)
		}
		if table == r.table {
			ks.Chains[name] = c
		}
	}
	return nil
}

var hookByNum = map[uint32]Hook{
	unix.NF_INET_PRE_ROUTING: HookPrerouting, unix.NF_INET_LOCAL_IN: HookInput,
	unix.NF_INET_FORWARD: HookForward, unix.NF_INET_LOCAL_OUT: HookOutput,
	unix.NF_INET_POST_ROUTING: HookPostrouting,
}

func decodeChain(m netlink.Message) (name, table string, c *KernelChain, err error) {
	c = &KernelChain{}
	base := &BaseChain{Policy: PolicyAccept}
	hooked := false
	err = decodeAttrs(m, func(ad *netlink.AttributeDecoder) {
		switch ad.Type() {
		case unix.NFTA_CHAIN_NAME:
			name = ad.String()
		case unix.NFTA_CHAIN_TABLE:
			table = ad.String()
		case unix.NFTA_CHAIN_TYPE:
			base.Type = ChainType(ad.String())
		case unix.NFTA_CHAIN_POLICY:
			if ad.Uint32() == nfDrop {
				base.Policy = PolicyDrop
			}
		case unix.NFTA_CHAIN_HOOK:
			hooked = true
			ad.Nested(func(nd *netlink.AttributeDecoder) error {
				for nd.Next() {
					switch nd.Type() {
					case unix.NFTA_HOOK_HOOKNUM:
						base.Hook = hookByNum[nd.Uint32()]
					case unix.NFTA_HOOK_PRIORITY:
						base.Priority = int(int32(nd.Uint32()))
					}
				}
				return nil
			})
		}
	})
	if hooked {
		c.Base = base
	}
	return name, table, c, err
}

func (r *reader) readRules(ks *KernelState) error {
	msgs, err := r.request(unix.NFT_MSG_GETRULE, true, strAttr(unix.NFTA_RULE_TABLE, r.table))
	if err != nil {
		return fmt.Errorf("listing rules: %w", err)
	}
	for _, m := range msgs {
		var chain, table string
		var handle uint64
		var hash string
		err := decodeAttrs(m, func(ad *netlink.AttributeDecoder) {
			switch ad.Type() {
			case unix.NFTA_RULE_TABLE:
				table = ad.String()
			case unix.NFTA_RULE_CHAIN:
				chain = ad.String()
			case unix.NFTA_RULE_HANDLE:
				handle = ad.Uint64()
			case unix.NFTA_RULE_USERDATA:
				hash = hashFromUserData(ad.Bytes())
			}
		})
		if err != nil {
			return fmt.Errorf("decoding rule: %w", err)
		}
		if c := ks.Chains[chain]; c != nil && table == r.table {
			c.Hashes = append(c.Hashes, hash)
			c.Handles = append(c.Handles, handle)
		}
	}
	return nil
}
