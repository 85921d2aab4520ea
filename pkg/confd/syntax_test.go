package confd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestSymbol(t *testing.T) {
	tests := []struct {
		name, want string // want "" for an error
		quote      bool
	}{
		{"Mesh_198_18_0_2", "Mesh_198_18_0_2", false},
		{"Node_fd5c_ff__2_port_1179", "Node_fd5c_ff__2_port_1179", false},
		{"bgp_my-filter_importFilterV4", "'bgp_my-filter_importFilterV4'", false},
		{"bgp_f_exportFilterV6", "'bgp_f_exportFilterV6'", true},
		{"A" + strings.Repeat("x", 63), "A" + strings.Repeat("x", 63), false},
		{"A" + strings.Repeat("x", 64), "", false}, // too long for BIRD
		{"", "", false},                                 // empty
		{"static", "", false},                           // a keyword (no capital letter)
		{"if", "", true},                                // a keyword even when quoted
		{"Mesh_1 { }", "", false},                       // not a symbol character
		{"Mesh'1", "", false},                           // would end the quoted symbol
		{"Mesh\n1", "", false},                          // line break
		{"Mesh_198.18.0.2%eth0", "", false},             // zone
		{"Global_\u0661", "", false},                    // non-ASCII digit
		{"Node_fd5c:ff::2", "'Node_fd5c:ff::2'", false}, // quoted characters
	}
	for _, tc := range tests {
		s, err := newSymbol(tc.name, tc.quote)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("newSymbol(%q) = %s, want an error", tc.name, s)
		case tc.want != "" && (err != nil || s.String() != tc.want):
			t.Errorf("newSymbol(%q) = %s, %v; want %s", tc.name, s, err, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	for _, ok := range []string{"pa55word", "eth*", "p@ss w0rd!#{}'", "motdepasseé"} {
		if _, err := newText(ok); err != nil {
			t.Errorf("newText(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{`a"b`, `a\b`, "a\nb", "a\rb", "a\x00b", "a\tb", "\xff", "a\u2028b", strings.Repeat("x", 1025)} {
		if txt, err := newText(bad); err == nil {
			t.Errorf("newText(%q) = %s, want an error", bad, txt)
		}
	}
}

func TestComment(t *testing.T) {
	tests := map[string]string{
		"plain text, with \"quotes\" and \\": "plain text, with \"quotes\" and \\",
		"line\nbreak":                        `line\nbreak`,
		"cr\rnul\x00tab\tdel\x7f":            `cr\rnul\x00tab\tdel\x7f`,
		"bad utf-8 \xff\xfe":                 `bad utf-8 \xff\xfe`,
		"separator\u2028x\u0085y":            `separator\u2028x\u0085y`,
		"élan":                               "élan",
	}
	for in, want := range tests {
		if got := newComment(in).String(); got != want {
			t.Errorf("newComment(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestValuesParseInBIRD writes every kind of value into a configuration and checks it with
// `bird -p`: what the constructors accept, BIRD accepts, and a comment cannot end its line.
func TestValuesParseInBIRD(t *testing.T) {
	requireBIRD(t)
	sym, err := newSymbol("bgp_a.b-c:d_0_importFilterV4", true)
	if err != nil {
		t.Fatal(err)
	}
	proto, _ := newSymbol("Node_fd5c_ff__2_port_1179", false)
	pw, _ := newText("p@ss w0rd!#{}'é")
	hostile := "x\n}\nprotocol static { ipv4; route 0.0.0.0/0 blackhole; }\n#\r\x00\xff\u2028"
	c, _ := parseCommunity("4294967295:0:65535")
	cfg := "router id 198.18.0.1;\n# " + newComment(hostile).String() + "\n" +
		"function " + sym.String() + "(bool is_same_as) { if (is_same_as) then { " + c.Attribute().String() + ".add(" + c.String() + "); accept; } }\n" +
		"protocol bgp " + proto.String() + " { local as 64512; neighbor fd5c:ff::2 port 1179 as 64512; password " + pw.String() + ";\n" +
		"  ipv6 { import filter { " + sym.String() + "(true); accept; }; export none; }; }\n"
	path := filepath.Join(t.TempDir(), "bird.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bird", "-p", "-c", path).CombinedOutput(); err != nil {
		t.Fatalf("bird -p: %v: %s\n%s", err, out, cfg)
	}
	if d := parseDeclarations(cfg); len(d.Protocols) != 1 || len(d.Routes) != 0 {
		t.Errorf("declarations %+v, want one protocol and no routes", d)
	}
}
