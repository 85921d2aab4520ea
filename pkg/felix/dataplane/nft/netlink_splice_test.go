package nft

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// encodeBatch queues the operations on a google/nftables Conn and returns the batch it would
// send (reqs[0] is the batch begin marker) and the splices recorded.
func encodeBatch(t *testing.T, ops ...Op) ([]netlink.Message, map[int][]splice) {
	t.Helper()
	var sent []netlink.Message
	conn, err := nftables.New(nftables.WithTestDial(func(reqs []netlink.Message) ([]netlink.Message, error) {
		if reqs != nil {
			sent = reqs
		}
		return []netlink.Message{fakeAck}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	b := &batch{conn: conn, table: &nftables.Table{Name: "calico", Family: nftables.TableFamilyINet}}
	for _, op := range ops {
		if err := b.queue(op); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}
	return sent, b.splices
}

// ruleExprs decodes the expression list of a NEWRULE message into (name, data) pairs.
func ruleExprs(t *testing.T, msg []byte) (names []string, data [][]byte) {
	t.Helper()
	err := walkAttrs(msg[4:], func(typ uint16, payload []byte) error {
		if typ&^unix.NLA_F_NESTED != unix.NFTA_RULE_EXPRESSIONS {
			return nil
		}
		return walkAttrs(payload, func(_ uint16, elem []byte) error {
			return walkAttrs(elem, func(typ uint16, p []byte) error {
				switch typ &^ unix.NLA_F_NESTED {
				case unix.NFTA_EXPR_NAME:
					names = append(names, strings.TrimRight(string(p), "\x00"))
				case unix.NFTA_EXPR_DATA:
					data = append(data, p)
				}
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return names, data
}

// TestSpliceMasqueradeRange checks the bytes of a masquerade with a port range: without the
// splice the rule carries the placeholder the kernel refuses; with it, the masq expression
// carries the port registers and NF_NAT_RANGE_PROTO_SPECIFIED (| RANDOM_FULLY), as nft sends.
func TestSpliceMasqueradeRange(t *testing.T) {
	anon := Op{Kind: OpAddRule, Name: "c", Rule: NewRule(DPort(ProtoTCP, Port(80), Port(443)), Accept())}
	for _, tc := range []struct {
		name        string
		fullyRandom bool
		flags       uint32
	}{
		{"range", false, unix.NF_NAT_RANGE_PROTO_SPECIFIED},
		{"range fully-random", true, unix.NF_NAT_RANGE_PROTO_SPECIFIED | unix.NF_NAT_RANGE_PROTO_RANDOM_FULLY},
	} {
		t.Run(tc.name, func(t *testing.T) {
			masq := Op{Kind: OpAddRule, Name: "c", Rule: NewRule(L4Proto(ProtoUDP), MasqueradeToPorts(Ports(1024, 65535), tc.fullyRandom))}
			// The anonymous set of the first rule shifts the masquerade rule to message 4.
			reqs, splices := encodeBatch(t, anon, masq)
			if len(splices) != 1 || splices[4] == nil {
				t.Fatalf("splices %v, want one for message 4", splices)
			}
			names, data := ruleExprs(t, reqs[4].Data)
			if want := "meta cmp immediate immediate masq"; strings.Join(names, " ") != want {
				t.Fatalf("expressions %v, want %s", names, want)
			}
			var before expr.Masq
			if err := expr.Unmarshal(unix.NFPROTO_INET, data[4], &before); err != nil || before.RegProtoMin != 0 {
				t.Fatalf("placeholder %+v (%v), want a masq from register 0", before, err)
			}
			if err := applySplices(reqs, splices); err != nil {
				t.Fatal(err)
			}
			names, data = ruleExprs(t, reqs[4].Data)
			var got expr.Masq
			if err := expr.Unmarshal(unix.NFPROTO_INET, data[4], &got); err != nil {
				t.Fatal(err)
			}
			if names[4] != "masq" || !got.ToPorts || got.RegProtoMin != reg1 || got.RegProtoMax != reg2 || got.FullyRandom != tc.fullyRandom {
				t.Errorf("spliced masq %+v", got)
			}
			if !bytes.Contains(data[4], be32(tc.flags)) {
				t.Errorf("spliced masq data %x lacks flags %#x", data[4], tc.flags)
			}
		})
	}
}

func be32(v uint32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }

func TestSpliceErrors(t *testing.T) {
	rule := Op{Kind: OpAddRule, Name: "c", Rule: NewRule(MasqueradeToPorts(Ports(1, 2), false))}
	reqs, splices := encodeBatch(t, rule)
	for _, tc := range []struct {
		name    string
		splices map[int][]splice
	}{
		{"not a rule message", map[int][]splice{0: splices[1]}},
		{"beyond the batch", map[int][]splice{7: splices[1]}},
		{"expression index out of range", map[int][]splice{1: {{index: 9, elem: splices[1][0].elem}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := append([]netlink.Message(nil), reqs...)
			if err := applySplices(msgs, tc.splices); err == nil {
				t.Error("applySplices accepted a splice that does not fit the batch")
			}
		})
	}
	if _, err := spliceRule([]byte{1, 2}, splices[1]); err == nil {
		t.Error("spliceRule accepted a truncated message")
	}
}
