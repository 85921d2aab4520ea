package vm

import (
	"encoding/binary"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft/internal/nla"
)

// Register is a VM register as the kernel numbers them: 0 is the verdict
// register, 1-4 the 128-bit registers, 8-23 the 32-bit registers (8-11
// overlay register 1, 12-15 register 2, and so on).
type Register uint32

// Registers.
const (
	RegVerdict Register = 0
	Reg1       Register = 1
	Reg2       Register = 2
	Reg3       Register = 3
	Reg4       Register = 4
	Reg32Base  Register = 8 // the first 32-bit register, overlaying Reg1
)

// Reg32 returns the 32-bit register that holds byte offset off of the
// register file (off a multiple of 4): the layout of a concatenation.
func Reg32(off int) Register { return Reg32Base + Register(off/4) }

// Expr is one instruction.
type Expr interface {
	// Name is the kernel's name of the expression ("payload", "cmp", ...).
	Name() string
	// String renders the instruction as `nft --debug=netlink` does.
	String() string
	marshal(b *nla.Builder)
}

// Marshal appends the expressions as the payload of NFTA_RULE_EXPRESSIONS:
// one NFTA_LIST_ELEM per expression.
func Marshal(b *nla.Builder, exprs []Expr) {
	for _, x := range exprs {
		elem := b.Begin(unix.NFTA_LIST_ELEM)
		b.String(unix.NFTA_EXPR_NAME, x.Name())
		data := b.Begin(unix.NFTA_EXPR_DATA)
		x.marshal(b)
		b.End(data)
		b.End(elem)
	}
}

// Unmarshal parses the payload of NFTA_RULE_EXPRESSIONS. Expressions it
// does not know become Unknown, so a foreign rule still parses.
func Unmarshal(data []byte) ([]Expr, error) {
	var out []Expr
	it := nla.NewIter(data)
	for it.Next() {
		if it.Type() != unix.NFTA_LIST_ELEM {
			continue
		}
		x, err := unmarshalElem(it.Data())
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, it.Err()
}

func unmarshalElem(b []byte) (Expr, error) {
	var name string
	var data []byte
	it := nla.NewIter(b)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_EXPR_NAME:
			name = it.String()
		case unix.NFTA_EXPR_DATA:
			data = it.Data()
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	parse, ok := parsers[name]
	if !ok {
		return Unknown{Kind: name, Data: append([]byte(nil), data...)}, nil
	}
	x, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("expression %s: %w", name, err)
	}
	return x, nil
}

// parsers decode NFTA_EXPR_DATA by expression name.
var parsers = map[string]func([]byte) (Expr, error){}

func register(name string, parse func([]byte) (Expr, error)) { parsers[name] = parse }

// Unknown is an expression this package does not model.
type Unknown struct {
	Kind string
	Data []byte
}

func (x Unknown) Name() string           { return x.Kind }
func (x Unknown) String() string         { return fmt.Sprintf("[ %s (unknown) ]", x.Kind) }
func (x Unknown) marshal(b *nla.Builder) { b.Buf = append(b.Buf, x.Data...) }

// dataValue appends an NFTA_DATA_* nest holding a value.
func dataValue(b *nla.Builder, typ uint16, v []byte) {
	n := b.Begin(typ)
	b.Bytes(unix.NFTA_DATA_VALUE, v)
	b.End(n)
}

// parseData reads an NFTA_DATA_* nest: a value or a verdict.
func parseData(b []byte) (value []byte, v *Verdict, err error) {
	it := nla.NewIter(b)
	for it.Next() {
		switch it.Type() {
		case unix.NFTA_DATA_VALUE:
			value = append([]byte(nil), it.Data()...)
		case unix.NFTA_DATA_VERDICT:
			vd, err := parseVerdict(it.Data())
			if err != nil {
				return nil, nil, err
			}
			v = &vd
		}
	}
	return value, v, it.Err()
}

// formatWords prints data as nft's debug output does: 32-bit words in host
// order, zero-padded.
func formatWords(b []byte) string {
	var parts []string
	for i := 0; i < len(b); i += 4 {
		var w [4]byte
		copy(w[:], b[i:])
		parts = append(parts, fmt.Sprintf("0x%08x", binary.NativeEndian.Uint32(w[:])))
	}
	return strings.Join(parts, " ")
}
