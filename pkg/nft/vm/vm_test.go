package vm

import (
	"reflect"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
)

// TestMarshalRoundTrip: every instruction marshals to netlink and parses
// back to itself, and prints as nft --debug=netlink does.
func TestMarshalRoundTrip(t *testing.T) {
	exprs := []Expr{
		Payload{Base: BaseNetwork, Offset: 12, Len: 4, DReg: Reg1},
		Meta{Key: MetaL4Proto, Reg: Reg32(4)},
		Meta{Key: MetaMark, Reg: Reg1, Set: true},
		Cmp{Op: CmpNeq, SReg: Reg1, Data: []byte{10, 0, 0, 1}},
		Bitwise{SReg: Reg1, DReg: Reg1, Len: 4, Mask: []byte{255, 0, 0, 0}, Xor: []byte{0, 0, 0, 0}},
		Range{Op: CmpEq, SReg: Reg1, From: []byte{0, 80}, To: []byte{0, 90}},
		Lookup{SReg: Reg1, Set: "s", SetID: 3, Invert: true},
		Lookup{SReg: Reg1, Set: "m", DReg: RegVerdict, HasDReg: true},
		Immediate{DReg: Reg2, Data: []byte{0, 80}},
		Immediate{DReg: RegVerdict, Verdict: Verdict{Code: VerdictGoto, Chain: "x"}},
		Byteorder{SReg: Reg32(1), DReg: Reg32(1), Op: 1, Len: 2, Size: 2},
		Counter{Packets: 1, Bytes: 2},
		Log{Has: LogPrefix | LogLevel | LogGroup | LogFlags, Prefix: "p", Level: 6, Group: 2, Flags: 1},
		Log{Has: LogPrefix | LogGroup | LogSnaplen, Prefix: "API0|gnp/a", Group: 1, Snaplen: 80},
		Reject{Type: 1, Code: 0},
		NAT{Type: NATSource, Family: 2, RegAddrMin: Reg1, RegProtoMin: Reg2, RegProtoMax: Reg3, Flags: NATProtoSpecified},
		Masq{Flags: NATProtoSpecified | NATRandomFully, RegProtoMin: Reg1, RegProtoMax: Reg2},
		Notrack{},
		Ct{Key: CtStatus, DReg: Reg1},
		Fib{DReg: Reg1, Result: FibResultOIF, Flags: FibSAddr | FibMark | FibIIF},
	}
	var b nla.Builder
	Marshal(&b, exprs)
	back, err := Unmarshal(b.Buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, exprs) {
		t.Errorf("round trip:\n%s\nwant\n%s", Dump(back), Dump(exprs))
	}
	for _, want := range []string{
		"[ payload load 4b @ network header + 12 => reg 1 ]", "[ meta load l4proto => reg 9 ]",
		"[ lookup reg 1 set s 0x1 ]", "[ immediate reg 0 goto -> x ]",
		"[ masq proto_min reg 1 proto_max reg 2 flags 0x12 ]", "[ fib saddr . mark . iif oif => reg 1 ]",
	} {
		if !strings.Contains(Dump(back), want) {
			t.Errorf("dump lacks %q", want)
		}
	}
}

// TestUnknown: an expression this package does not model parses as
// Unknown, with its data.
func TestUnknown(t *testing.T) {
	var b nla.Builder
	Marshal(&b, []Expr{Unknown{Kind: "limit", Data: []byte{8, 0, 1, 0, 0, 0, 0, 1}}})
	back, err := Unmarshal(b.Buf)
	if err != nil || len(back) != 1 || back[0].Name() != "limit" {
		t.Fatalf("%v %v", back, err)
	}
}
