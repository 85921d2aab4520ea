package main

import (
	"testing"
	"time"
)

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

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, tt := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := percentile(ds, tt.p); got != tt.want {
			t.Errorf("percentile(%v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("percentile of nothing")
	}
}
