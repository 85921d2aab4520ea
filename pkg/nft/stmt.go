package nft

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// VerdictKind is what a verdict does.
type VerdictKind uint8

// Verdict kinds.
const (
	VerdictAccept VerdictKind = iota + 1
	VerdictDrop
	VerdictReturn
	VerdictJump
	VerdictGoto
	VerdictContinue
)

// Verdict ends or diverts rule evaluation. It is a rule statement and the
// value type of verdict maps.
type Verdict struct {
	Kind  VerdictKind
	Chain string // jump and goto
}

// Accept accepts the packet.
func Accept() Verdict { return Verdict{Kind: VerdictAccept} }

// Drop drops the packet.
func Drop() Verdict { return Verdict{Kind: VerdictDrop} }

// Return returns to the calling chain.
func Return() Verdict { return Verdict{Kind: VerdictReturn} }

// Continue goes on with the next rule (a verdict map value meaning "no
// decision").
func Continue() Verdict { return Verdict{Kind: VerdictContinue} }

// Jump evaluates chain and comes back when it returns.
func Jump(chain string) Verdict { return Verdict{Kind: VerdictJump, Chain: chain} }

// Goto evaluates chain and does not come back.
func Goto(chain string) Verdict { return Verdict{Kind: VerdictGoto, Chain: chain} }

func (v Verdict) String() string {
	switch v.Kind {
	case VerdictAccept:
		return "accept"
	case VerdictDrop:
		return "drop"
	case VerdictReturn:
		return "return"
	case VerdictContinue:
		return "continue"
	case VerdictJump:
		return "jump " + quoteName(v.Chain)
	case VerdictGoto:
		return "goto " + quoteName(v.Chain)
	}
	return "verdict(" + strconv.Itoa(int(v.Kind)) + ")"
}

func (v Verdict) text(p *printer) { p.word(v.String()) }

// verdictCodes are the kernel's codes of the verdict kinds.
var verdictCodes = [...]int32{
	VerdictAccept: vm.VerdictAccept, VerdictDrop: vm.VerdictDrop, VerdictReturn: vm.VerdictReturn,
	VerdictJump: vm.VerdictJump, VerdictGoto: vm.VerdictGoto, VerdictContinue: vm.VerdictContinue,
}

// VM is the verdict as kernel data.
func (v Verdict) VM() (vm.Verdict, error) {
	if v.Kind == 0 || int(v.Kind) >= len(verdictCodes) {
		return vm.Verdict{}, fmt.Errorf("unknown verdict %d", v.Kind)
	}
	code := verdictCodes[v.Kind]
	if (v.Kind == VerdictJump || v.Kind == VerdictGoto) != (v.Chain != "") {
		return vm.Verdict{}, fmt.Errorf("verdict %s: chain %q", v, v.Chain)
	}
	return vm.Verdict{Code: code, Chain: v.Chain}, nil
}

// VerdictFromVM converts kernel verdict data.
func VerdictFromVM(v vm.Verdict) (Verdict, bool) {
	switch v.Code {
	case vm.VerdictAccept:
		return Accept(), true
	case vm.VerdictDrop:
		return Drop(), true
	case vm.VerdictReturn:
		return Return(), true
	case vm.VerdictContinue:
		return Continue(), true
	case vm.VerdictJump:
		return Jump(v.Chain), v.Chain != ""
	case vm.VerdictGoto:
		return Goto(v.Chain), v.Chain != ""
	}
	return Verdict{}, false
}

func (v Verdict) lower(l *lowerer) {
	x, err := v.VM()
	if err != nil {
		l.fail(err)
		return
	}
	l.emit(vm.Immediate{DReg: vm.RegVerdict, Verdict: x})
}

func (v Verdict) refs(visit func(Ref)) {
	if v.Kind == VerdictJump || v.Kind == VerdictGoto {
		visit(Ref{Kind: RefChain, Name: v.Chain})
	}
}

// counterStmt is `counter`.
type counterStmt struct{ noRefs }

// Counter counts packets and bytes.
func Counter() Expr { return counterStmt{} }

func (counterStmt) String() string   { return "counter" }
func (counterStmt) text(p *printer)  { p.word("counter") }
func (counterStmt) lower(l *lowerer) { l.emit(vm.Counter{}) }

// LogLevel is a syslog level for Log.
type LogLevel uint8

// Log levels (nft's names). LogWarn is the kernel's default.
const (
	LogEmerg LogLevel = iota
	LogAlert
	LogCrit
	LogErr
	LogWarn
	LogNotice
	LogInfo
	LogDebug
)

var logLevelNames = []string{"emerg", "alert", "crit", "err", "warn", "notice", "info", "debug"}

// logStmt is `log prefix "..." [level LEVEL]` (the kernel log) or `log
// prefix "..." group G [snaplen N]` (an NFLOG group; no level).
type logStmt struct {
	noRefs
	prefix  string
	level   LogLevel
	toGroup bool
	group   uint16
	snaplen uint32
}

// Log logs the packet to the kernel log at the default level (warn) with
// prefix, made safe by SanitizeText.
func Log(prefix string) Expr { return LogAt(prefix, LogWarn) }

// LogAt logs the packet at level.
func LogAt(prefix string, level LogLevel) Expr {
	return logStmt{prefix: SanitizeText(prefix), level: min(level, LogDebug)}
}

// LogGroup sends the packet to NFLOG group with prefix (made safe by
// SanitizeText), copying at most snaplen bytes of it; snaplen 0 leaves
// the length to the kernel (the whole packet).
func LogGroup(prefix string, group uint16, snaplen uint32) Expr {
	return logStmt{prefix: SanitizeText(prefix), level: LogWarn, toGroup: true, group: group, snaplen: snaplen}
}

func (s logStmt) String() string { return exprString(s) }

// text prints in nft's order: prefix, group, snaplen, level.
func (s logStmt) text(p *printer) {
	out := "log"
	if s.prefix != "" {
		out += " prefix " + strconv.Quote(s.prefix)
	}
	if s.toGroup {
		out += " group " + strconv.FormatUint(uint64(s.group), 10)
	}
	if s.snaplen != 0 {
		out += " snaplen " + strconv.FormatUint(uint64(s.snaplen), 10)
	}
	if s.level != LogWarn {
		out += " level " + logLevelNames[s.level]
	}
	p.word(out)
}

func (s logStmt) lower(l *lowerer) {
	l.emit(s.vm())
}

func (s logStmt) vm() vm.Log {
	x := vm.Log{Prefix: s.prefix, Group: s.group, Snaplen: s.snaplen}
	if s.prefix != "" {
		x.Has |= vm.LogPrefix
	}
	if s.toGroup {
		x.Has |= vm.LogGroup
	}
	if s.snaplen != 0 {
		x.Has |= vm.LogSnaplen
	}
	if s.level != LogWarn {
		x.Has, x.Level = x.Has|vm.LogLevel, uint32(s.level)
	}
	return x
}

// rejectStmt is `reject`: an ICMP(v6) port unreachable (ICMPX in inet,
// bridge and netdev tables).
type rejectStmt struct{ noRefs }

// Reject rejects the packet with a port unreachable error.
func Reject() Expr { return rejectStmt{} }

func (rejectStmt) String() string  { return "reject" }
func (rejectStmt) text(p *printer) { p.word("reject") }

func (rejectStmt) lower(l *lowerer) {
	switch l.fam {
	case FamilyIP:
		l.emit(vm.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: 3}) // ICMP_PORT_UNREACH
	case FamilyIP6:
		l.emit(vm.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: 4}) // ICMPV6_PORT_UNREACH
	case FamilyInet, FamilyBridge, FamilyNetdev:
		l.emit(vm.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_PORT_UNREACH})
	default:
		l.fail(fmt.Errorf("reject cannot be used in a table of family %s", l.fam))
	}
}

// notrackStmt is `notrack`.
type notrackStmt struct{ noRefs }

// Notrack exempts the packet from connection tracking (raw priority
// prerouting and output chains).
func Notrack() Expr { return notrackStmt{} }

func (notrackStmt) String() string   { return "notrack" }
func (notrackStmt) text(p *printer)  { p.word("notrack") }
func (notrackStmt) lower(l *lowerer) { l.emit(vm.Notrack{}) }

// markStmt sets the packet mark: to or when set, else to
// (mark & and) | or, where and includes the or bits (as nft prints it).
type markStmt struct {
	noRefs
	set     bool
	and, or uint32
}

// SetMark sets the packet mark to value (`meta mark set 0x00000001`).
func SetMark(value uint32) Expr { return markStmt{set: true, or: value} }

// SetMarkBits sets the mark to (mark & and) | or.
func SetMarkBits(and, or uint32) Expr {
	if and&^or == 0 {
		return SetMark(or)
	}
	return markStmt{and: and | or, or: or}
}

// OrMark sets the bits of the mark (`meta mark set meta mark | bits`).
func OrMark(bits uint32) Expr { return SetMarkBits(^uint32(0), bits) }

// AndMark keeps only mask's bits (`meta mark set meta mark & mask`).
func AndMark(mask uint32) Expr { return SetMarkBits(mask, 0) }

func (s markStmt) String() string { return exprString(s) }

func (s markStmt) text(p *printer) {
	switch {
	case s.set:
		p.word(fmt.Sprintf("meta mark set 0x%08x", s.or))
	case s.or == 0:
		p.word(fmt.Sprintf("meta mark set meta mark & 0x%08x", s.and))
	case s.and == ^uint32(0):
		p.word(fmt.Sprintf("meta mark set meta mark | 0x%08x", s.or))
	default:
		p.word(fmt.Sprintf("meta mark set meta mark & 0x%08x | 0x%08x", s.and, s.or))
	}
}

func (s markStmt) lower(l *lowerer) {
	if s.set {
		l.emit(vm.Immediate{DReg: vm.Reg1, Data: le32(s.or)})
	} else {
		l.emit(vm.Meta{Key: vm.MetaMark, Reg: vm.Reg1}, bitwise32(s.and&^s.or, s.or))
	}
	l.emit(vm.Meta{Key: vm.MetaMark, Reg: vm.Reg1, Set: true})
}

// natStmt is `snat ip to ADDR[:PORTS]` or `dnat ip to ADDR[:PORTS]`.
type natStmt struct {
	noRefs
	dnat   bool
	addr   string // 4 or 16 bytes
	lo, hi uint16 // 0: the port is kept
}

// SNAT rewrites the source address to addr (nat postrouting chains).
func SNAT(addr netip.Addr) Expr { return natTo(false, addr, PortRange{}) }

// SNATToPorts rewrites the source to addr and a port of r (a port already
// in r is kept). The rule needs a transport protocol match before it.
func SNATToPorts(addr netip.Addr, r PortRange) Expr { return natTo(false, addr, r) }

// DNAT rewrites the destination address to addr (nat prerouting/output).
func DNAT(addr netip.Addr) Expr { return natTo(true, addr, PortRange{}) }

// DNATToPort rewrites the destination to addr:port; the rule needs a
// transport protocol match before it.
func DNATToPort(addr netip.Addr, port uint16) Expr { return natTo(true, addr, Port(port)) }

func natTo(dnat bool, addr netip.Addr, r PortRange) Expr {
	if !addr.IsValid() || addr.Zone() != "" || r.First > r.Last || (r.First == 0 && r.Last != 0) {
		return bad("invalid NAT target %s:%s", addr, r)
	}
	return natStmt{dnat: dnat, addr: string(addr.AsSlice()), lo: r.First, hi: r.Last}
}

func (s natStmt) version() IPVersion {
	if len(s.addr) == 16 {
		return IPv6
	}
	return IPv4
}

func (s natStmt) String() string { return exprString(s) }

func (s natStmt) text(p *printer) {
	out := "snat "
	if s.dnat {
		out = "dnat "
	}
	if p.fam != FamilyIP && p.fam != FamilyIP6 {
		out += ipKeyword(s.version()) + " "
	}
	to := formatAddr([]byte(s.addr))
	if s.lo != 0 {
		if s.version() == IPv6 {
			to = "[" + to + "]"
		}
		to += ":" + PortRange{s.lo, s.hi}.String()
	}
	p.word(out + "to " + to)
}

// lower encodes as nft does: the address in register 1, the ports in
// registers 2 and (for a range) 3, NF_NAT_RANGE_PROTO_SPECIFIED with ports.
func (s natStmt) lower(l *lowerer) {
	if !l.fam.carriesIP(s.version()) || l.fam == FamilyBridge || l.fam == FamilyNetdev {
		l.fail(fmt.Errorf("%s NAT cannot be used in a table of family %s", s.version(), l.fam))
		return
	}
	n := vm.NAT{Type: vm.NATSource, Family: uint32(s.version().nfproto()), RegAddrMin: vm.Reg1}
	if s.dnat {
		n.Type = vm.NATDestination
	}
	l.emit(vm.Immediate{DReg: vm.Reg1, Data: []byte(s.addr)})
	if s.lo != 0 {
		l.emit(vm.Immediate{DReg: vm.Reg2, Data: be16(s.lo)})
		n.RegProtoMin, n.Flags = vm.Reg2, vm.NATProtoSpecified
		if s.hi != s.lo {
			l.emit(vm.Immediate{DReg: vm.Reg3, Data: be16(s.hi)})
			n.RegProtoMax = vm.Reg3
		}
	}
	l.emit(n)
}

func be16(v uint16) []byte { return []byte{byte(v >> 8), byte(v)} }

// masqStmt is `masquerade [to :PORTS] [fully-random]`.
type masqStmt struct {
	noRefs
	fullyRandom bool
	lo, hi      uint16 // 0: the port is kept
}

// Masquerade source-NATs to the address of the output interface.
func Masquerade() Expr { return masqStmt{} }

// MasqueradeFullyRandom is `masquerade fully-random`.
func MasqueradeFullyRandom() Expr { return masqStmt{fullyRandom: true} }

// MasqueradeToPorts is `masquerade to :FIRST-LAST [fully-random]`: the
// source port is taken from r. The rule needs a transport protocol match.
func MasqueradeToPorts(r PortRange, fullyRandom bool) Expr {
	if r.First == 0 || r.First > r.Last {
		return bad("invalid masquerade port range %s", r)
	}
	return masqStmt{fullyRandom: fullyRandom, lo: r.First, hi: r.Last}
}

func (s masqStmt) String() string { return exprString(s) }

func (s masqStmt) text(p *printer) {
	out := "masquerade"
	if s.lo != 0 {
		out += " to :" + PortRange{s.lo, s.hi}.String()
	}
	if s.fullyRandom {
		out += " fully-random"
	}
	p.word(out)
}

// lower sends NF_NAT_RANGE_PROTO_SPECIFIED with a port range: without it
// the kernel ignores the range (google/nftables v0.3.0 drops the flag).
func (s masqStmt) lower(l *lowerer) {
	if l.fam != FamilyIP && l.fam != FamilyIP6 && l.fam != FamilyInet {
		l.fail(fmt.Errorf("masquerade cannot be used in a table of family %s", l.fam))
		return
	}
	x := vm.Masq{}
	if s.fullyRandom {
		x.Flags |= vm.NATRandomFully
	}
	if s.lo != 0 {
		l.emit(vm.Immediate{DReg: vm.Reg1, Data: be16(s.lo)})
		x.Flags |= vm.NATProtoSpecified
		x.RegProtoMin = vm.Reg1
		if s.hi != s.lo {
			l.emit(vm.Immediate{DReg: vm.Reg2, Data: be16(s.hi)})
			x.RegProtoMax = vm.Reg2
		}
	}
	l.emit(x)
}

// vmapStmt is `FIELD [. FIELD...] vmap @map`.
type vmapStmt struct {
	fields fieldList
	m      string
}

// Vmap looks the fields up in the named verdict map and applies the
// verdict it finds; a packet whose key is absent goes on to the next rule.
func Vmap(mapName string, fields ...Field) Expr {
	fl, ok := newFieldList(fields)
	if !ok {
		return bad("a verdict map lookup needs 1 to %d fields", maxConcat)
	}
	return vmapStmt{fields: fl, m: mapName}
}

// IIFNameVmap is `iifname vmap @map`.
func IIFNameVmap(mapName string) Expr { return Vmap(mapName, FieldIIFName) }

// OIFNameVmap is `oifname vmap @map`.
func OIFNameVmap(mapName string) Expr { return Vmap(mapName, FieldOIFName) }

func (s vmapStmt) String() string { return exprString(s) }

func (s vmapStmt) text(p *printer) { p.word(s.fields.String() + " vmap @" + quoteName(s.m)) }

func (s vmapStmt) lower(l *lowerer) {
	if s.fields.n == 0 {
		l.fail(errors.New("verdict map lookup without fields"))
		return
	}
	l.loadFields(s.fields.slice())
	l.emit(vm.Lookup{SReg: vm.Reg1, DReg: vm.RegVerdict, HasDReg: true, Set: s.m})
}

func (s vmapStmt) refs(visit func(Ref)) {
	visit(Ref{Kind: RefMap, Name: s.m, KeyType: s.fields.dataType()})
}
