package topo

import "testing"

func TestHasToken(t *testing.T) {
	tests := []struct {
		line, tok string
		want      bool
	}{
		{"add rule inet calico filter-x tcp dport 41005 accept", "41005", true},
		{"add rule inet calico filter-x tcp dport 410050 accept", "41005", false},
		{"add element inet calico s { 10.66.0.5 }", "10.66.0.5", true},
		{"add element inet calico s { 10.66.0.50 }", "10.66.0.5", false},
		{"add element inet calico s { 110.66.0.5, 10.66.0.5 }", "10.66.0.5", true},
		{"10.66.0.5", "10.66.0.5", true},
		{"", "1", false},
	}
	for _, tt := range tests {
		if got := hasToken(tt.line, tt.tok); got != tt.want {
			t.Errorf("hasToken(%q, %q) = %v", tt.line, tt.tok, got)
		}
	}
}
