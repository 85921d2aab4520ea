package confd

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The values the templates print are of the types below (or numbers and net/netip addresses and
// prefixes). Each is made only by its constructor, which checks it against BIRD's grammar, so no
// string from the datastore reaches BIRD's configuration unchecked: a name is a symbol BIRD
// accepts, a quoted string cannot end early, a comment cannot end its line.

// maxSymbolLen is BIRD's limit on the length of a symbol (SYM_MAX_LEN).
const maxSymbolLen = 64

var (
	plainSymbol  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	quotedSymbol = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)
	hasUpper     = regexp.MustCompile(`[A-Z]`)
)

// Symbol is the name of a protocol, function or filter we declare. It has BIRD's symbol syntax
// (letters, digits and '_', or quoted with '.', ':' and '-' as well), at most 64 characters, and
// at least one capital letter: BIRD's keywords are all lower case, and BIRD prefers a keyword
// over a symbol even when quoted, so a generated name can never turn into one.
type Symbol struct {
	name  string
	quote bool
}

// newSymbol checks name. quote renders it quoted even when it need not be (as Project Calico
// writes BGPFilter function names).
func newSymbol(name string, quote bool) (Symbol, error) {
	switch {
	case name == "" || len(name) > maxSymbolLen:
		return Symbol{}, fmt.Errorf("BIRD symbol %q: length %d is not 1-%d", name, len(name), maxSymbolLen)
	case !quotedSymbol.MatchString(name):
		return Symbol{}, fmt.Errorf("BIRD symbol %q: only letters, digits, '_', '.', ':' and '-' are allowed", name)
	case !hasUpper.MatchString(name):
		return Symbol{}, fmt.Errorf("BIRD symbol %q: no capital letter (it could be a keyword)", name)
	}
	return Symbol{name: name, quote: quote || !plainSymbol.MatchString(name)}, nil
}

// Name is the symbol without quotes (as BIRD shows it).
func (s Symbol) Name() string { return s.name }

// String is the symbol as written in BIRD's configuration.
func (s Symbol) String() string {
	if s.quote {
		return "'" + s.name + "'"
	}
	return s.name
}

// maxTextLen bounds a string literal (BIRD reads longer ones, but nothing we write is that long).
const maxTextLen = 1024

// Text is the content of a BIRD string literal ("..."): printable characters except the double
// quote, which would end it, and the backslash, which some BIRD versions read as an escape.
type Text struct{ s string }

func newText(s string) (Text, error) {
	if len(s) > maxTextLen {
		return Text{}, fmt.Errorf("string of %d bytes is longer than %d", len(s), maxTextLen)
	}
	for i, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) || r == '"' || r == '\\' {
			return Text{}, fmt.Errorf("character %s at byte %d cannot be written in a BIRD string", strconv.QuoteRune(r), i)
		}
	}
	return Text{s: s}, nil
}

// String is the quoted literal.
func (t Text) String() string { return `"` + t.s + `"` }

// Comment is text for a '#' comment: every character that is not printable (line breaks,
// control characters, invalid UTF-8) is escaped as in a Go string, so it stays on its line.
type Comment struct{ s string }

func newComment(s string) Comment {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += max(n, 1)
	}
	return Comment{s: b.String()}
}

// String is the escaped text.
func (c Comment) String() string { return c.s }

// Syntax is a piece of BIRD configuration that this package composes from the typed values
// above and from constants (a filter condition, a list of log classes). Nothing else makes one.
type Syntax struct{ s string }

// syntaxf composes Syntax. Its arguments must be Symbols, Texts, Syntax, numbers or
// net/netip values: never a string from the datastore.
func syntaxf(format string, args ...any) Syntax { return Syntax{s: fmt.Sprintf(format, args...)} }

// String is the configuration text.
func (s Syntax) String() string { return s.s }

// Empty reports whether there is no text.
func (s Syntax) Empty() bool { return s.s == "" }

// joinSyntax joins pieces with sep (a constant).
func joinSyntax(pieces []Syntax, sep string) Syntax {
	parts := make([]string, len(pieces))
	for i, p := range pieces {
		parts[i] = p.s
	}
	return Syntax{s: strings.Join(parts, sep)}
}

// ASN is an AS number.
type ASN uint32

// Community is a BGP community: standard (two 16-bit parts) or large (three 32-bit parts).
type Community struct {
	Large bool
	parts [3]uint32
}

// parseCommunity parses "aa:nn" (16-bit parts) or "aa:nn:mm" (32-bit parts), decimal without
// leading zeros or signs.
func parseCommunity(v string) (Community, bool) {
	fields := strings.Split(v, ":")
	if len(fields) != 2 && len(fields) != 3 {
		return Community{}, false
	}
	c := Community{Large: len(fields) == 3}
	bits := 16
	if c.Large {
		bits = 32
	}
	for i, f := range fields {
		n, err := strconv.ParseUint(f, 10, bits)
		if err != nil || strconv.FormatUint(n, 10) != f {
			return Community{}, false
		}
		c.parts[i] = uint32(n)
	}
	return c, true
}

// String is BIRD's tuple: "(64512, 120)" or "(64512, 300, 100)".
func (c Community) String() string {
	if c.Large {
		return fmt.Sprintf("(%d, %d, %d)", c.parts[0], c.parts[1], c.parts[2])
	}
	return fmt.Sprintf("(%d, %d)", c.parts[0], c.parts[1])
}

// Attribute is the route attribute holding communities of this kind.
func (c Community) Attribute() Syntax {
	if c.Large {
		return Syntax{s: "bgp_large_community"}
	}
	return Syntax{s: "bgp_community"}
}
