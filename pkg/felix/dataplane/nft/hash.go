package nft

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/google/nftables/userdata"
)

// hashLen is the length of a rule hash, as in Calico's `cali:<hash>;`.
const hashLen = 16

// hashPrefix starts every comment the Applier writes.
const hashPrefix = "cali:"

// ruleHashes gives every rule of a chain an identity: base64url(SHA-224)
// chained over the chain name, the previous rule's hash and the rule's text,
// so a rule's hash changes when it or any earlier rule changes.
func ruleHashes(chain string, rules []Rule) []string {
	out := make([]string, len(rules))
	h := sha256.New224()
	h.Write([]byte(chain))
	var sum []byte
	for i, r := range rules {
		h.Write(sum)
		h.Write([]byte(r.String()))
		sum = h.Sum(sum[:0])
		out[i] = base64.RawURLEncoding.EncodeToString(sum)[:hashLen]
	}
	return out
}

// kernelComment is the comment stored with a rule in the kernel:
// `cali:<hash>;` followed by the rule's own comment, if any.
func kernelComment(hash string, r Rule) string {
	c := hashPrefix + hash + ";"
	if rc := r.comment(); rc != "" {
		c += " " + rc
	}
	return c
}

// ruleUserData encodes a comment as nft does (NFTNL_UDATA_RULE_COMMENT).
func ruleUserData(comment string) []byte {
	return userdata.AppendString(nil, userdata.TypeComment, comment)
}

// hashFromComment extracts the hash from a kernel rule comment; "" when the
// rule was not written by us.
func hashFromComment(c string) string {
	rest, ok := strings.CutPrefix(c, hashPrefix)
	if !ok || len(rest) < hashLen+1 || rest[hashLen] != ';' {
		return ""
	}
	return rest[:hashLen]
}

// hashFromUserData extracts our hash from a rule's raw userdata (a list of
// type, length, value records); malformed userdata yields "".
func hashFromUserData(ud []byte) string {
	for len(ud) >= 2 {
		typ, n := ud[0], int(ud[1])
		if len(ud) < 2+n {
			return ""
		}
		if typ == byte(userdata.TypeComment) {
			return hashFromComment(strings.TrimSuffix(string(ud[2:2+n]), "\x00"))
		}
		ud = ud[2+n:]
	}
	return ""
}
