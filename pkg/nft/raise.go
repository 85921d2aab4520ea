package nft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// RaiseRule turns a rule's kernel instructions, as read from a table of
// family f, back into expressions: the inverse of LowerRule. anon returns
// the content of an anonymous set the rule looks up (by its kernel name,
// "__set3"). What it cannot decode becomes an Undecoded expression and an
// error; the rest of the rule is still returned.
//
// Protocol dependencies are folded into the matches that need them, as nft
// does when it lists a rule: the instructions of `meta l4proto tcp tcp
// dport 80` raise to `tcp dport 80`. So RaiseRule(LowerRule(r)) is r in
// canonical form, and Canonical gives that form for comparisons.
func RaiseRule(f Family, exprs []vm.Expr, anon func(name string) (AnonSet, bool)) ([]Expr, error) {
	r := raiser{fam: f, x: exprs, anon: anon, l4: -1, pending: [numDeps]int{-1, -1, -1}}
	for r.i < len(r.x) {
		at := r.i
		if err := r.step(); err != nil {
			r.out = append(r.out, Undecoded{Reason: err.Error()})
			return r.result(), fmt.Errorf("instruction %d (%s): %w", at, r.x[at], err)
		}
	}
	return r.result(), nil
}

// Canonical returns r as it reads back from the kernel (LowerRule then
// RaiseRule): the form a rule read from the kernel is compared with.
func Canonical(f Family, r Rule) (Rule, error) {
	lw, err := LowerRule(f, r)
	if err != nil {
		return Rule{}, err
	}
	named := make([]vm.Expr, len(lw.Exprs))
	for i, x := range lw.Exprs {
		if lk, ok := x.(vm.Lookup); ok && lk.Set == "" {
			lk.Set = fmt.Sprintf("__anon%d", lk.SetID)
			x = lk
		}
		named[i] = x
	}
	exprs, err := RaiseRule(f, named, func(name string) (AnonSet, bool) {
		var i int
		if _, err := fmt.Sscanf(name, "__anon%d", &i); err != nil || i < 1 || i > len(lw.Anon) {
			return AnonSet{}, false
		}
		return lw.Anon[i-1], true
	})
	return Rule{Exprs: exprs, Comment: r.Comment}, err
}

const (
	depVersion = iota // meta nfproto (inet) or meta protocol (bridge, netdev)
	depL4             // meta l4proto
	depEther          // meta iiftype
	numDeps
)

var errUnknownSequence = errors.New("instruction sequence not understood")

// raiser walks a rule's instructions. Like nft, it keeps the last explicit
// protocol match of each kind pending: a later match that implies it (a
// tcp port match implies meta l4proto tcp) removes it from the output.
type raiser struct {
	fam     Family
	x       []vm.Expr
	i       int
	out     []Expr
	anon    func(string) (AnonSet, bool)
	ver     IPVersion
	l4      int
	ether   bool
	pending [numDeps]int // index in out of a pending dependency match, -1: none
}

func (r *raiser) result() []Expr {
	return slices.DeleteFunc(r.out, func(x Expr) bool { return x == nil })
}

func (r *raiser) peek(k int) vm.Expr {
	if r.i+k < len(r.x) {
		return r.x[r.i+k]
	}
	return nil
}

func (r *raiser) add(x Expr) { r.out = append(r.out, x) }

// step raises the expression(s) starting at r.i.
func (r *raiser) step() error {
	switch x := r.x[r.i].(type) {
	case vm.Immediate:
		if x.DReg == vm.RegVerdict {
			v, ok := VerdictFromVM(x.Verdict)
			if !ok {
				return fmt.Errorf("unknown verdict %v", x.Verdict)
			}
			r.add(v)
			r.i++
			return nil
		}
		return r.registerStmt()
	case vm.Counter:
		r.add(counterStmt{})
	case vm.Notrack:
		r.add(notrackStmt{})
	case vm.Log:
		return r.log(x)
	case vm.Reject:
		return r.reject(x)
	case vm.Masq:
		return r.registerStmt()
	case vm.Fib:
		return r.fib(x)
	case vm.Meta:
		if x.Key == vm.MetaMark && !x.Set {
			if bw, ok := r.peek(1).(vm.Bitwise); ok {
				if set, ok := r.peek(2).(vm.Meta); ok && set.Set {
					return r.markBits(bw, set)
				}
			}
		}
		return r.loads()
	case vm.Payload, vm.Ct:
		return r.loads()
	default:
		return errUnknownSequence
	}
	r.i++
	return nil
}

func (r *raiser) log(x vm.Log) error {
	s := logStmt{prefix: x.Prefix, level: LogWarn, toGroup: x.Has&vm.LogGroup != 0, group: x.Group, snaplen: x.Snaplen}
	if x.Has&vm.LogLevel != 0 {
		s.level = LogLevel(min(x.Level, uint32(LogDebug)))
	}
	want := s.vm()
	if x.Has&vm.LogLevel != 0 && x.Level == uint32(LogWarn) { // the default, said explicitly
		want.Has, want.Level = want.Has|vm.LogLevel, x.Level
	}
	if want != x {
		return errors.New("log options not modelled")
	}
	r.add(s)
	r.i++
	return nil
}

func (r *raiser) reject(x vm.Reject) error {
	var l lowerer
	l.fam = r.fam
	rejectStmt{}.lower(&l)
	if len(l.out) != 1 || l.out[0] != vm.Expr(x) {
		return fmt.Errorf("reject type %d code %d not modelled in family %s", x.Type, x.Code, r.fam)
	}
	r.add(rejectStmt{})
	r.i++
	return nil
}

func (r *raiser) fib(x vm.Fib) error {
	c, ok := r.peek(1).(vm.Cmp)
	if !ok || c.SReg != x.DReg || x.DReg != vm.Reg1 || len(c.Data) != 4 || (c.Op != vm.CmpEq && c.Op != vm.CmpNeq) {
		return errUnknownSequence
	}
	m := fibMatch{flags: FibFlags(x.Flags), neg: c.Op == vm.CmpNeq, value: leU32(c.Data)}
	switch x.Result {
	case vm.FibResultAddrType:
		m.addrType = true
	case vm.FibResultOIF:
	default:
		return fmt.Errorf("fib result %d not modelled", x.Result)
	}
	r.add(m)
	r.i += 2
	return nil
}

// markBits is `meta mark set meta mark & AND | OR`.
func (r *raiser) markBits(bw vm.Bitwise, set vm.Meta) error {
	if bw.SReg != vm.Reg1 || bw.DReg != vm.Reg1 || set.Reg != vm.Reg1 || len(bw.Mask) != 4 || len(bw.Xor) != 4 {
		return errUnknownSequence
	}
	mask, xor := leU32(bw.Mask), leU32(bw.Xor)
	r.add(SetMarkBits(mask|xor, xor))
	r.i += 3
	return nil
}

// registerStmt raises immediates loading registers and the statement that
// uses them: meta mark set, nat, masquerade.
func (r *raiser) registerStmt() error {
	regs := map[vm.Register][]byte{}
	for {
		x, ok := r.peek(0).(vm.Immediate)
		if !ok || x.DReg == vm.RegVerdict {
			break
		}
		regs[x.DReg] = x.Data
		r.i++
	}
	var s Expr
	var err error
	switch x := r.peek(0).(type) {
	case vm.Meta:
		if v := regs[x.Reg]; x.Set && x.Key == vm.MetaMark && len(v) == 4 && len(regs) == 1 {
			s = SetMark(leU32(v))
		}
	case vm.NAT:
		s, err = raiseNAT(x, regs)
	case vm.Masq:
		s, err = raiseMasq(x, regs)
	}
	if err == nil && s == nil {
		err = errUnknownSequence
	}
	if err != nil {
		return err
	}
	r.add(s)
	r.i++
	return nil
}

func raiseNAT(x vm.NAT, regs map[vm.Register][]byte) (Expr, error) {
	addr := regs[x.RegAddrMin]
	if x.RegAddrMin == 0 || (x.RegAddrMax != 0 && x.RegAddrMax != x.RegAddrMin) || (len(addr) != 4 && len(addr) != 16) {
		return nil, errors.New("nat without a single address")
	}
	s := natStmt{dnat: x.Type == vm.NATDestination, addr: string(addr)}
	if uint32(s.version().nfproto()) != x.Family || (x.Type != vm.NATSource && x.Type != vm.NATDestination) {
		return nil, errors.New("nat family or type not modelled")
	}
	// The kernel adds NF_NAT_RANGE_MAP_IPS when it is given an address.
	lo, hi, err := regPorts(regs, x.RegProtoMin, x.RegProtoMax, x.Flags&^natMapIPs)
	s.lo, s.hi = lo, hi
	return s, err
}

const natMapIPs = 1 // NF_NAT_RANGE_MAP_IPS

func raiseMasq(x vm.Masq, regs map[vm.Register][]byte) (Expr, error) {
	lo, hi, err := regPorts(regs, x.RegProtoMin, x.RegProtoMax, x.Flags&^vm.NATRandomFully)
	return masqStmt{fullyRandom: x.Flags&vm.NATRandomFully != 0, lo: lo, hi: hi}, err
}

// regPorts reads a NAT port range from its registers; flags must be
// exactly NF_NAT_RANGE_PROTO_SPECIFIED with ports, 0 without.
func regPorts(regs map[vm.Register][]byte, rmin, rmax vm.Register, flags uint32) (lo, hi uint16, err error) {
	if rmin == 0 {
		if rmax != 0 || flags != 0 {
			return 0, 0, errors.New("nat flags not modelled")
		}
		return 0, 0, nil
	}
	if rmax == 0 {
		rmax = rmin
	}
	a, b := regs[rmin], regs[rmax]
	if len(a) != 2 || len(b) != 2 || flags != vm.NATProtoSpecified {
		return 0, 0, errors.New("nat ports not modelled")
	}
	return beU16(a), beU16(b), nil
}

func leU32(b []byte) uint32 { return binary.NativeEndian.Uint32(b) }
func beU16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
