package diags

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// Redacted replaces every secret value in the bundle.
const Redacted = "REDACTED"

// secretWord matches a key name that may hold a secret: anything named like a key, password,
// secret, token, credential or user name. Redaction fails closed: a non-secret that happens to
// match (a key file path, a public key) is redacted too.
var secretWord = regexp.MustCompile(`(?i)key|passw|pwd|secret|token|credential|username|private`)

// keyChars are the characters of a key name in the formats redacted here.
const keyChars = `[A-Za-z0-9_.\-/]`

var (
	// A PEM block (certificates and public keys are kept; every other block is redacted).
	pemBlock = regexp.MustCompile(`(?s)-----BEGIN ([A-Z0-9 ]+)-----.*?-----END [A-Z0-9 ]+-----`)
	// A PEM BEGIN line.
	pemBegin = regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]+)-----`)
	// A whole line "key = value" or "key: value" (TOML, YAML, INI, env files), also commented out.
	kvLine = regexp.MustCompile(`^(\s*(?:#|;|//)?\s*(?:-\s+)?(?:export\s+)?["']?)(` + keyChars + `+)(["']?\s*[:=]\s*)(.*)$`)
	// "key": value inside a line (JSON).
	jsonPair = regexp.MustCompile(`("` + keyChars + `*"\s*:\s*)("(?:[^"\\]|\\.)*"|[^,}\]\s]+)`)
	// key=value inside a line (logfmt, environments, command lines).
	eqPair = regexp.MustCompile(`(` + keyChars + `+)\s*=\s*("[^"]*"|'[^']*'|[^\s,;&}]+)`)
	// key: value inside a line (text logs).
	colonPair = regexp.MustCompile(`\b(` + keyChars + `+):\s+("[^"]*"|'[^']*'|\S+)`)
	// --option value on a command line.
	optionPair = regexp.MustCompile(`(--?` + keyChars + `+)\s+("[^"]*"|'[^']*'|[^\s-]\S*)`)
	// BIRD's password "..." (BGP MD5 passwords in bird.cfg and bird_peers.cfg).
	birdPassword = regexp.MustCompile(`(?i)\bpassword\s+"(?:[^"\\]|\\.)*"`)
	// Credentials in a URL: scheme://user:password@ or scheme://user@.
	urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)[^/\s@]+@`)
)

// keptPEM are the PEM block types that hold no secret.
var keptPEM = map[string]bool{"CERTIFICATE": true, "X509 CRL": true, "PUBLIC KEY": true, "CERTIFICATE REQUEST": true}

// RedactText removes secrets from text of any kind: PEM private keys, values of secret-named keys
// (TOML, YAML, JSON, env, logfmt, command-line options), BIRD passwords and URL credentials.
// A JSON document is redacted by structure (every value under a secret-named key, whatever its
// type); every line is redacted by the text rules as well.
func RedactText(data []byte) []byte {
	if out, ok := redactJSONDocument(data); ok {
		data = out
	}
	s := redactPEM(string(data))
	s = birdPassword.ReplaceAllString(s, `password "`+Redacted+`"`)
	s = urlUserinfo.ReplaceAllString(s, "${1}"+Redacted+"@")
	return []byte(redactLines(s))
}

func redactPEM(s string) string {
	s = pemBlock.ReplaceAllStringFunc(s, func(b string) string {
		typ := pemBlock.FindStringSubmatch(b)[1]
		if keptPEM[typ] {
			return b
		}
		return "-----BEGIN " + typ + "-----\n" + Redacted + "\n-----END " + typ + "-----"
	})
	return redactOpenPEM(s)
}

// redactOpenPEM redacts a PEM block cut off before its END line (a truncated file or log),
// from its BEGIN line to the next BEGIN line or the end of the text.
func redactOpenPEM(s string) string {
	var b strings.Builder
	for {
		loc := pemBegin.FindStringSubmatchIndex(s)
		if loc == nil {
			b.WriteString(s)
			return b.String()
		}
		typ := s[loc[2]:loc[3]]
		b.WriteString(s[:loc[1]])
		rest := s[loc[1]:]
		next := len(rest)
		if n := pemBegin.FindStringIndex(rest); n != nil {
			next = n[0]
		}
		body := rest[:next]
		if !keptPEM[typ] && !strings.Contains(body, "-----END ") {
			body = "\n" + Redacted + " (truncated block)\n"
		}
		b.WriteString(body)
		s = rest[next:]
	}
}

// redactLines applies the per-line rules. A redacted value that opens a multi-line value (a TOML
// triple-quoted string, a YAML block scalar) redacts the lines that continue it too.
func redactLines(s string) string {
	lines := strings.Split(s, "\n")
	var cont continuation
	for i, l := range lines {
		if cont.active() {
			if cont.consumes(l) {
				lines[i] = Redacted
				continue
			}
			cont = continuation{}
		}
		lines[i], cont = redactLine(l)
	}
	return strings.Join(lines, "\n")
}

// continuation tracks a multi-line secret value.
type continuation struct {
	tripleQuote string // TOML: the closing quotes to wait for
	indent      int    // YAML block scalar: lines indented more than this continue it (-1: none)
	open        bool
}

func (c continuation) active() bool { return c.open }

// consumes reports whether line l still belongs to the value (and, for a TOML string, closes it).
func (c *continuation) consumes(l string) bool {
	if c.tripleQuote != "" {
		if strings.Contains(l, c.tripleQuote) {
			c.open = false
		}
		return true
	}
	if strings.TrimSpace(l) == "" {
		return true
	}
	return indentOf(l) > c.indent
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }

func redactLine(l string) (string, continuation) {
	var cont continuation
	if m := kvLine.FindStringSubmatch(l); m != nil && secretWord.MatchString(m[2]) {
		value := strings.TrimSpace(m[4])
		if strings.Trim(value, `"',`) == Redacted {
			return l, cont // already redacted (a JSON document redacted by structure)
		}
		switch {
		case strings.HasPrefix(value, `"""`) || strings.HasPrefix(value, `'''`):
			q := value[:3]
			if !strings.Contains(value[3:], q) {
				cont = continuation{tripleQuote: q, open: true}
			}
		case value == "" || strings.HasPrefix(value, "|") || strings.HasPrefix(value, ">"):
			cont = continuation{indent: indentOf(l), open: true}
		}
		return m[1] + m[2] + m[3] + Redacted, cont
	}
	l = replaceIfSecret(jsonPair, l, func(m []string) string { return m[1] + `"` + Redacted + `"` })
	l = replaceIfSecret(eqPair, l, func(m []string) string { return m[1] + "=" + Redacted })
	l = replaceIfSecret(colonPair, l, func(m []string) string { return m[1] + ": " + Redacted })
	l = replaceIfSecret(optionPair, l, func(m []string) string { return m[1] + " " + Redacted })
	return l, cont
}

// replaceIfSecret rewrites each match of re whose first group names a secret.
func replaceIfSecret(re *regexp.Regexp, l string, repl func([]string) string) string {
	return re.ReplaceAllStringFunc(l, func(match string) string {
		m := re.FindStringSubmatch(match)
		if !secretWord.MatchString(m[1]) {
			return match
		}
		return repl(m)
	})
}

// redactJSONDocument redacts a whole JSON document by structure; ok is false if data is not JSON.
// Each line of a JSON-lines document (zerolog's journal output) is handled by the line rules.
func redactJSONDocument(data []byte) ([]byte, bool) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') {
		return nil, false
	}
	var v any
	if err := json.Unmarshal(trimmed, &v); err != nil {
		return nil, false
	}
	out, err := json.MarshalIndent(RedactValue(v), "", "  ")
	if err != nil {
		return nil, false
	}
	return append(out, '\n'), true
}

// RedactValue replaces, in a decoded JSON value, every value under a secret-named key.
func RedactValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if secretWord.MatchString(k) {
				t[k] = Redacted
			} else {
				t[k] = RedactValue(x)
			}
		}
	case []any:
		for i, x := range t {
			t[i] = RedactValue(x)
		}
	}
	return v
}
