package felix

import (
	"runtime/debug"
	"testing"
)

// TestGCPercent: felix's GC target is gcPercent unless GOGC is set in the environment.
func TestGCPercent(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		want int
	}{
		{"default", "", gcPercent},
		{"GOGC in the environment", "200", 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.env)
			defer debug.SetGCPercent(debug.SetGCPercent(100))
			restore := setGCPercent()
			if got := debug.SetGCPercent(100); got != tc.want {
				t.Errorf("GOGC %d, want %d", got, tc.want)
			}
			restore()
		})
	}
}
