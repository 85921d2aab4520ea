package nft

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// ObjectKind is the kind of object an error is about.
type ObjectKind uint8

// Object kinds.
const (
	ObjectTable ObjectKind = iota + 1
	ObjectChain
	ObjectRule
	ObjectSet
	ObjectMap
)

func (k ObjectKind) String() string {
	return [...]string{"", "table", "chain", "rule", "set", "map"}[k]
}

// Object names one object of a table: the table itself, a chain, a rule
// (chain Name, position Rule), a set or a map.
type Object struct {
	Kind  ObjectKind
	Table TableID
	Name  string
	Rule  int // ObjectRule: the rule's index in its chain; -1 otherwise
}

func (o Object) String() string {
	switch o.Kind {
	case ObjectTable:
		return "table " + o.Table.String()
	case ObjectRule:
		return fmt.Sprintf("rule %d of chain %s in table %s", o.Rule, o.Name, o.Table)
	}
	return fmt.Sprintf("%s %s in table %s", o.Kind, o.Name, o.Table)
}

// ChainObject is the Object of chain name of table t (a rule's error is
// about its chain too: see Object.Chain).
func ChainObject(t TableID, name string) Object {
	return Object{Kind: ObjectChain, Table: t, Name: name, Rule: -1}
}

// Owner is the object to replace when this one is refused: a rule's chain,
// else the object itself.
func (o Object) Owner() Object {
	if o.Kind == ObjectRule {
		return ChainObject(o.Table, o.Name)
	}
	return o
}

// ObjectError is the refusal of one operation on one object.
type ObjectError struct {
	Object Object
	Op     OpKind
	Err    error  // from the kernel: a syscall.Errno
	Detail string // the kernel's extended message or the element concerned, if any
	// Key is the first key of the element the kernel refused, when it said
	// which (the element of a set, or of a rule's anonymous set).
	Key Key
}

func (e ObjectError) Error() string {
	s := e.Op.String() + " " + e.Object.String() + ": " + e.Err.Error()
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

func (e ObjectError) Unwrap() error { return e.Err }

// CommitError is a refused batch: nothing of it was applied. Objects lists
// the refused operations in batch order. When the kernel refuses a rule
// while validating the table as a whole (a jump loop, an expression not
// allowed at a hook), it also refuses every rule after it in the batch:
// the first error is then the cause. Err is set when the refusal could not
// be pinned on an object.
type CommitError struct {
	Objects []ObjectError
	Err     error
	Kernel  bool // the kernel refused it (rather than the encoder, before sending)
}

func (e *CommitError) Error() string {
	var b strings.Builder
	if e.Kernel {
		b.WriteString("kernel refused the batch")
	} else {
		b.WriteString("batch refused before sending")
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	for i, o := range e.Objects {
		if i == 5 {
			b.WriteString("; and " + strconv.Itoa(len(e.Objects)-5) + " more")
			break
		}
		b.WriteString("; " + o.Error())
	}
	return b.String()
}

// Unwrap returns the batch error and the object errors.
func (e *CommitError) Unwrap() []error {
	var out []error
	if e.Err != nil {
		out = append(out, e.Err)
	}
	for _, o := range e.Objects {
		out = append(out, o)
	}
	return out
}

// Owners lists the distinct objects to replace (rules' chains, sets, maps,
// tables), in order of first refusal.
func (e *CommitError) Owners() []Object {
	var out []Object
	seen := map[Object]bool{}
	for _, o := range e.Objects {
		if ow := o.Object.Owner(); !seen[ow] {
			seen[ow] = true
			out = append(out, ow)
		}
	}
	return out
}

// Causes lists the distinct objects to replace (as Owners) whose refusal
// cannot be a consequence of another refusal of the batch: the first
// refused operation, and every later one unless its error is one an earlier
// refusal can cause. The kernel goes on through a batch after a refusal, so
// that one commit reports every object it cannot take; but an object that
// could not be created makes the operations referring to it fail (ENOENT),
// or a delete of what still uses it fail (EBUSY); and a rule that makes the
// table invalid (a jump loop, EMLINK or ELOOP; an expression its hook does
// not allow, EOPNOTSUPP) makes every later rule of the table fail with the
// same error. Those are left out: once the causes are replaced they go
// through, or show up again as the first refusal. Refusals by the encoder
// (not Kernel) are all causes.
func (e *CommitError) Causes() []Object {
	if !e.Kernel {
		return e.Owners()
	}
	var out []Object
	seen := map[Object]bool{}
	validation := map[TableID]syscall.Errno{} // a table's first validation-class refusal
	for i, o := range e.Objects {
		var errno syscall.Errno
		errors.As(o.Err, &errno)
		consequence := i > 0 && (errno == syscall.ENOENT || errno == syscall.EBUSY ||
			isValidationErrno(errno) && validation[o.Object.Table] == errno)
		if isValidationErrno(errno) && validation[o.Object.Table] == 0 {
			validation[o.Object.Table] = errno
		}
		if ow := o.Object.Owner(); !consequence && !seen[ow] {
			seen[ow] = true
			out = append(out, ow)
		}
	}
	return out
}

func isValidationErrno(e syscall.Errno) bool {
	return e == syscall.EMLINK || e == syscall.ELOOP || e == syscall.EOPNOTSUPP
}
