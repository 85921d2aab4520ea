package calc

import (
	"testing"
)

// TestParsePrefixOrAddrUnmaps: an IPv4-mapped net is the IPv4 net it maps, with an IPv4
// length; a mapped net shorter than /96 stays IPv6. Before, ::ffff:10.0.0.1/128 became an
// invalid prefix (10.0.0.1 with length 128) that the dataplane rendered as no match at all.
func TestParsePrefixOrAddrUnmaps(t *testing.T) {
	for in, want := range map[string]string{
		"::ffff:10.0.0.1/128": "10.0.0.1/32",
		"::ffff:10.0.0.0/104": "10.0.0.0/8",
		"::ffff:10.0.0.1":     "10.0.0.1/32",
		"::ffff:0:0/80":       "::ffff:0.0.0.0/80",
		"10.0.0.0/8":          "10.0.0.0/8",
		"fd5c::/16":           "fd5c::/16",
	} {
		p, err := parsePrefixOrAddr(in)
		if err != nil || !p.IsValid() || p.String() != want {
			t.Errorf("parsePrefixOrAddr(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
}
