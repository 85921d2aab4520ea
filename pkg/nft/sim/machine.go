package sim

import (
	"bytes"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// verdictBreak is NFT_BREAK: a match failed, the rule ends, the next one
// runs.
const verdictBreak int32 = unix.NFT_BREAK

// regs is the kernel's struct nft_regs: the verdict register and 64 bytes
// of data registers (four of 16 bytes overlaid by sixteen of 4).
type regs struct {
	verdict vm.Verdict
	data    [64]byte
}

// slot returns the bytes of n bytes from register r (what
// nft_parse_register and the kernel's length checks allow).
func (rg *regs) slot(r vm.Register, n int) ([]byte, error) {
	var off int
	switch {
	case r >= vm.Reg1 && r <= vm.Reg4:
		off = int(r-vm.Reg1) * 16
	case r >= vm.Reg32Base && r < vm.Reg32Base+16:
		off = int(r-vm.Reg32Base) * 4
	default:
		return nil, fmt.Errorf("register %d", r)
	}
	if n <= 0 || off+n > len(rg.data) {
		return nil, fmt.Errorf("%d bytes from register %d do not fit the registers", n, r)
	}
	return rg.data[off : off+n], nil
}

// store writes v into register r as the kernel's loads do: the 32-bit
// word holding the end of a value that is not a whole number of words is
// zeroed first (nft_reg_store8/16, payload and immediate loads).
func (rg *regs) store(r vm.Register, v []byte) error {
	n := len(v)
	if n%4 != 0 {
		n += 4 - n%4
	}
	dst, err := rg.slot(r, n)
	if err != nil {
		return err
	}
	clear(dst[len(dst)-4:])
	copy(dst, v)
	return nil
}

// machine runs the instructions of one rule for a packet.
type machine struct {
	st   *state
	c    *chain
	r    *rule
	rg   regs
	step *Step
}

// run evaluates the rule's instructions until one sets a verdict: it
// returns NFT_CONTINUE when every match held and no verdict was set,
// NFT_BREAK when a match failed, or the verdict.
func (m *machine) run() (vm.Verdict, error) {
	m.rg.verdict = vm.Verdict{Code: vm.VerdictContinue}
	for i, x := range m.r.exprs {
		if err := m.exec(x); err != nil {
			return vm.Verdict{}, fmt.Errorf("instruction %d %s: %w", i, x, err)
		}
		if m.rg.verdict.Code != vm.VerdictContinue {
			break
		}
	}
	return m.rg.verdict, nil
}

func (m *machine) fail() { m.rg.verdict = vm.Verdict{Code: verdictBreak} }

// exec runs one instruction. An instruction the simulator does not model
// is an error, never a guess.
func (m *machine) exec(x vm.Expr) error {
	switch x := x.(type) {
	case vm.Payload:
		return m.payload(x)
	case vm.Meta:
		if x.Set {
			return m.metaSet(x)
		}
		return m.meta(x)
	case vm.Cmp:
		return m.cmp(x)
	case vm.Bitwise:
		return m.bitwise(x)
	case vm.Range:
		return m.rangeCmp(x)
	case vm.Lookup:
		return m.lookup(x)
	case vm.Immediate:
		return m.immediate(x)
	case vm.Ct:
		return m.ct(x)
	case vm.Fib:
		return m.fib(x)
	case vm.Counter:
		m.step.Counters++
		return nil
	case vm.Log:
		m.step.Logs = append(m.step.Logs, Log{Prefix: x.Prefix, Group: x.Group, HasGroup: x.Has&vm.LogGroup != 0, Level: x.Level})
		return nil
	case vm.Reject:
		m.step.Effects = append(m.step.Effects, fmt.Sprintf("reject type %d code %d", x.Type, x.Code))
		m.rg.verdict = vm.Verdict{Code: vm.VerdictDrop}
		return nil
	case vm.Notrack:
		m.st.notrack()
		return nil
	case vm.NAT:
		return m.nat(x)
	case vm.Masq:
		return m.masq(x)
	}
	return fmt.Errorf("the %s instruction is not simulated", x.Name())
}

func (m *machine) payload(x vm.Payload) error {
	b, ok, err := m.st.payloadBytes(x.Base, int(x.Offset), int(x.Len))
	if err != nil || !ok {
		if !ok {
			m.fail()
		}
		return err
	}
	return m.rg.store(x.DReg, b)
}

func (m *machine) cmp(x vm.Cmp) error {
	v, err := m.rg.slot(x.SReg, len(x.Data))
	if err != nil {
		return err
	}
	d := bytes.Compare(v, x.Data)
	var ok bool
	switch x.Op {
	case vm.CmpEq:
		ok = d == 0
	case vm.CmpNeq:
		ok = d != 0
	case vm.CmpLt:
		ok = d < 0
	case vm.CmpLte:
		ok = d <= 0
	case vm.CmpGt:
		ok = d > 0
	case vm.CmpGte:
		ok = d >= 0
	default:
		return fmt.Errorf("comparison %d", x.Op)
	}
	if !ok {
		m.fail()
	}
	return nil
}

// bitwise is dst = (src & mask) ^ xor on whole 32-bit words, the mask and
// xor zero past Len (nft_bitwise_eval_bool).
func (m *machine) bitwise(x vm.Bitwise) error {
	n := (int(x.Len) + 3) &^ 3
	src, err := m.rg.slot(x.SReg, n)
	if err != nil {
		return err
	}
	dst, err := m.rg.slot(x.DReg, n)
	if err != nil {
		return err
	}
	out := make([]byte, n)
	for i := range out {
		out[i] = src[i]&at(x.Mask, i, int(x.Len)) ^ at(x.Xor, i, int(x.Len))
	}
	copy(dst, out)
	return nil
}

// at is b[i] within the first n bytes, else 0.
func at(b []byte, i, n int) byte {
	if i < n && i < len(b) {
		return b[i]
	}
	return 0
}

func (m *machine) rangeCmp(x vm.Range) error {
	v, err := m.rg.slot(x.SReg, len(x.From))
	if err != nil {
		return err
	}
	in := bytes.Compare(v, x.From) >= 0 && bytes.Compare(v, x.To) <= 0
	switch {
	case x.Op == vm.CmpEq && !in, x.Op == vm.CmpNeq && in:
		m.fail()
	case x.Op != vm.CmpEq && x.Op != vm.CmpNeq:
		return fmt.Errorf("range operator %d", x.Op)
	}
	return nil
}

// lookup looks the key up in a set or verdict map (nft_lookup_eval): a
// miss (or, inverted, a hit) ends the rule; a verdict map's hit loads the
// verdict.
func (m *machine) lookup(x vm.Lookup) error {
	s, err := m.set(x)
	if err != nil {
		return err
	}
	key, err := m.rg.slot(x.SReg, s.keyLen())
	if err != nil {
		return err
	}
	found, v := s.has(string(key))
	_, isMap := s.(verdictMap)
	switch {
	case isMap && (!x.HasDReg || x.DReg != vm.RegVerdict || x.Invert):
		return fmt.Errorf("verdict map %q used as a set", x.Set)
	case !isMap && x.HasDReg:
		return fmt.Errorf("set %q used as a map", x.Set)
	case found == x.Invert:
		m.fail()
	case isMap:
		m.rg.verdict = v
	}
	return nil
}

func (m *machine) set(x vm.Lookup) (set, error) {
	if x.Set == "" {
		if x.SetID == 0 || int(x.SetID) > len(m.r.anon) {
			return nil, fmt.Errorf("anonymous set %d does not exist", x.SetID)
		}
		return m.r.anon[x.SetID-1], nil
	}
	s, ok := m.c.t.sets[x.Set]
	if !ok {
		return nil, fmt.Errorf("set %q does not exist", x.Set)
	}
	return s, nil
}

func (m *machine) immediate(x vm.Immediate) error {
	if x.DReg == vm.RegVerdict {
		if (x.Verdict.Code == vm.VerdictJump || x.Verdict.Code == vm.VerdictGoto) && m.c.t.chains[x.Verdict.Chain] == nil {
			return fmt.Errorf("chain %q does not exist", x.Verdict.Chain)
		}
		m.rg.verdict = x.Verdict
		return nil
	}
	return m.rg.store(x.DReg, x.Data)
}
