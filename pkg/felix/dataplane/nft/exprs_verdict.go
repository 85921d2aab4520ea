package nft

import (
	"strconv"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
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
)

// Verdict ends (or diverts) rule evaluation. It is both a rule statement and
// the value type of verdict maps.
type Verdict struct {
	Kind  VerdictKind
	Chain string // jump and goto only
}

// Accept is the accept verdict.
func Accept() Verdict { return Verdict{Kind: VerdictAccept} }

// Drop is the drop verdict.
func Drop() Verdict { return Verdict{Kind: VerdictDrop} }

// Return returns to the calling chain.
func Return() Verdict { return Verdict{Kind: VerdictReturn} }

// Jump evaluates chain and comes back on return.
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
	case VerdictJump:
		return "jump " + quoteName(v.Chain)
	case VerdictGoto:
		return "goto " + quoteName(v.Chain)
	}
	return "verdict(" + strconv.Itoa(int(v.Kind)) + ")"
}

func (v Verdict) nft() *expr.Verdict {
	switch v.Kind {
	case VerdictAccept:
		return &expr.Verdict{Kind: expr.VerdictAccept}
	case VerdictDrop:
		return &expr.Verdict{Kind: expr.VerdictDrop}
	case VerdictReturn:
		return &expr.Verdict{Kind: expr.VerdictReturn}
	case VerdictJump:
		return &expr.Verdict{Kind: expr.VerdictJump, Chain: v.Chain}
	case VerdictGoto:
		return &expr.Verdict{Kind: expr.VerdictGoto, Chain: v.Chain}
	}
	return nil
}

func (v Verdict) encode(e *encoder) {
	if x := v.nft(); x != nil {
		e.add(x)
		return
	}
	e.fail(errBadVerdict)
}

func (v Verdict) refs(visit func(ref)) {
	if v.Kind == VerdictJump || v.Kind == VerdictGoto {
		visit(ref{kind: refChain, name: v.Chain})
	}
}

// counterStmt is `counter`.
type counterStmt struct{ noRefs }

// Counter counts packets and bytes.
func Counter() Expr { return counterStmt{} }

func (counterStmt) String() string    { return "counter" }
func (counterStmt) encode(e *encoder) { e.add(&expr.Counter{}) }

// logStmt is `log prefix "..." level info`.
type logStmt struct {
	noRefs
	prefix string
}

// Log logs the packet to the kernel log at level info with prefix.
func Log(prefix string) Expr { return logStmt{prefix: prefix} }

func (s logStmt) String() string { return "log prefix " + strconv.Quote(s.prefix) + " level info" }

func (s logStmt) encode(e *encoder) {
	e.add(&expr.Log{
		Key:   1<<unix.NFTA_LOG_PREFIX | 1<<unix.NFTA_LOG_LEVEL,
		Level: expr.LogLevelInfo,
		Data:  []byte(s.prefix),
	})
}

// rejectStmt is `reject`: ICMP(v6) port unreachable, or a TCP reset where
// the kernel chooses so.
type rejectStmt struct{ noRefs }

// Reject rejects the packet with an ICMPx port-unreachable.
func Reject() Expr { return rejectStmt{} }

func (rejectStmt) String() string { return "reject" }

func (rejectStmt) encode(e *encoder) {
	e.add(&expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_PORT_UNREACH})
}
