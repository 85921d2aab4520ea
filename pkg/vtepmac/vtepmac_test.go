package vtepmac

import "testing"

func TestForNode(t *testing.T) {
	// Expected values computed independently (Python hashlib).
	tests := []struct {
		node string
		v6   bool
		want string
	}{
		{"node1", false, "66:f9:37:c3:7e:94"},
		{"node1", true, "66:0f:35:f2:60:df"},
		{"host-a", false, "66:b7:a0:7e:28:cc"},
	}
	for _, tc := range tests {
		if got := ForNode(tc.node, tc.v6).String(); got != tc.want {
			t.Errorf("ForNode(%q, %v) = %s, want %s", tc.node, tc.v6, got, tc.want)
		}
	}
}
