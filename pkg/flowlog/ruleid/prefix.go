package ruleid

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/calico-host/calico-host/pkg/flowlog"
)

// MaxPrefixLen is the longest prefix felix writes: NFLOG's 64 bytes less
// the terminating NUL.
const MaxPrefixLen = 63

// The parts of a hashed prefix (felix/rules/nflogprefix.go): the first 10
// and the last 10 characters of the full prefix around "_" + 41 characters
// of its hash and another "_".
const (
	hashKeepHead = 10
	hashKeepTail = 10
	hashLen      = MaxPrefixLen - hashKeepHead - hashKeepTail - 1 // "_" + 41 hash characters
)

// Owner is what a rule belongs to, by felix's letter.
type Owner byte

// Owners.
const (
	OwnerPolicy  Owner = 'P'
	OwnerProfile Owner = 'R'
)

var actionLetters = map[flowlog.Action]byte{flowlog.Allow: 'A', flowlog.Deny: 'D', flowlog.Pass: 'P'}

// Prefix returns the NFLOG prefix felix renders for the rule, at most
// MaxPrefixLen bytes of [A-Za-z0-9._|/-] (see the package documentation
// for the formats).
func (r RuleID) Prefix() string {
	a, d := actionLetters[r.Action], byte(r.Direction)
	var p string
	switch {
	case r.Kind == flowlog.KindEndOfTier:
		p = fmt.Sprintf("%c%c%c|%s", a, OwnerPolicy, d, r.Tier)
	case r.Kind == flowlog.KindProfile && r.Name == NoMatchProfile:
		p = fmt.Sprintf("%c%c%c", a, OwnerProfile, d)
	case r.Kind == flowlog.KindProfile:
		p = fmt.Sprintf("%c%c%c%d|%s", a, OwnerProfile, d, r.Index, r.Name)
	case r.Index == -1:
		p = fmt.Sprintf("%c%c%c|%s", a, OwnerPolicy, d, r.Policy().ID())
	default:
		p = fmt.Sprintf("%c%c%c%d|%s", a, OwnerPolicy, d, r.Index, r.Policy().ID())
	}
	return maybeHash(p)
}

// maybeHash shortens a prefix of MaxPrefixLen bytes or more as felix does:
// it keeps the first and last 10 characters around a hash of the whole.
// (A prefix of exactly MaxPrefixLen bytes is hashed too, so that no
// unhashed prefix looks like a hashed one.)
func maybeHash(p string) string {
	if len(p) < MaxPrefixLen {
		return p
	}
	sum := sha256.Sum256([]byte(p))
	h := base64.RawURLEncoding.EncodeToString(sum[:])
	return p[:hashKeepHead] + "_" + h[:hashLen-1] + "_" + p[len(p)-hashKeepTail:]
}

// Parsed is what a prefix says by itself. A hashed prefix (Hashed) keeps
// only its first characters' meaning: Action, Owner and Direction. Index
// is -1 where the prefix carries none (end of tier, no match). Name is the
// policy's ID, the profile's name or the tier, "" for "no profile matched".
type Parsed struct {
	Action    flowlog.Action
	Owner     Owner
	Direction Direction
	Index     int
	Name      string
	Hashed    bool
}

// ParsePrefix parses a prefix felix's format. It accepts exactly what
// Prefix can return (hashed prefixes by their shape), so a prefix that
// parses prints back the same (String).
func ParsePrefix(s string) (Parsed, error) {
	if len(s) < 3 || len(s) > MaxPrefixLen {
		return Parsed{}, fmt.Errorf("prefix %q: length %d out of [3, %d]", s, len(s), MaxPrefixLen)
	}
	p := Parsed{Owner: Owner(s[1]), Direction: Direction(s[2]), Index: -1}
	for a, l := range actionLetters {
		if s[0] == l {
			p.Action = a
		}
	}
	if p.Action == flowlog.ActionUnspecified || (p.Owner != OwnerPolicy && p.Owner != OwnerProfile) ||
		checkDir(p.Direction) != nil {
		return Parsed{}, fmt.Errorf("prefix %q: bad action, owner or direction letters", s)
	}
	if len(s) == MaxPrefixLen {
		return p.parseHashed(s)
	}
	if err := p.parseRest(s[3:]); err != nil {
		return Parsed{}, fmt.Errorf("prefix %q: %w", s, err)
	}
	if p.String() != s {
		return Parsed{}, fmt.Errorf("prefix %q: not in canonical form", s)
	}
	return p, nil
}

func (p Parsed) parseHashed(s string) (Parsed, error) {
	h, tail := s[hashKeepHead:MaxPrefixLen-hashKeepTail], s[MaxPrefixLen-hashKeepTail:]
	if h[0] != '_' || h[len(h)-1] != '_' || strings.ContainsFunc(h[1:len(h)-1], notB64) ||
		strings.ContainsFunc(s[3:hashKeepHead]+tail, notPrefixChar) {
		return Parsed{}, fmt.Errorf("prefix %q: %d bytes but not a hashed prefix", s, MaxPrefixLen)
	}
	p.Hashed = true
	return p, nil
}

func notB64(r rune) bool {
	return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
}

func notPrefixChar(r rune) bool { return notB64(r) && r != '.' && r != '|' && r != '/' }

// parseRest parses what follows the three letters: "" (no profile match),
// "|name" (end of tier, staged no-match) or "N|name" (a rule).
func (p *Parsed) parseRest(rest string) error {
	if rest == "" {
		if p.Owner != OwnerProfile || p.Action != flowlog.Deny {
			return fmt.Errorf("no name")
		}
		return nil
	}
	num, name, ok := strings.Cut(rest, "|")
	if !ok {
		return fmt.Errorf("no '|'")
	}
	if num != "" {
		i, err := strconv.Atoi(num)
		if err != nil || checkIndex(i) != nil {
			return fmt.Errorf("bad rule index %q", num)
		}
		p.Index = i
	} else if p.Owner != OwnerPolicy || p.Action == flowlog.Allow {
		return fmt.Errorf("no rule index")
	}
	p.Name = name
	return p.checkName()
}

func (p Parsed) checkName() error {
	parts := strings.Split(p.Name, "/")
	if p.Owner == OwnerProfile || (p.Index == -1 && len(parts) == 1) { // a profile or a tier
		return checkName("name", p.Name)
	}
	kind, ok := flowlog.KindFromShort(parts[0])
	if !ok || kind == flowlog.KindProfile || len(parts) != map[bool]int{true: 3, false: 2}[kind.Namespaced()] {
		return fmt.Errorf("bad policy ID %q", p.Name)
	}
	if p.Index == -1 && (!kind.Staged() || p.Action != flowlog.Deny) {
		return fmt.Errorf("no-match of %q: only a staged policy's, and a deny", p.Name)
	}
	for _, n := range parts[1:] {
		if err := checkName("name", n); err != nil {
			return err
		}
	}
	return nil
}

// String prints an unhashed Parsed back as its prefix.
func (p Parsed) String() string {
	s := string([]byte{actionLetters[p.Action], byte(p.Owner), byte(p.Direction)})
	switch {
	case p.Name == "" && p.Index == -1:
		return s
	case p.Index == -1:
		return s + "|" + p.Name
	}
	return s + strconv.Itoa(p.Index) + "|" + p.Name
}
