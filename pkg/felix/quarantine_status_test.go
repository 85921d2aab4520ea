package felix

import (
	"strings"
	"testing"
)

// TestQuarantineStatus: the STATUS line says when the dataplane has objects it could not
// program, and says nothing when it has none.
func TestQuarantineStatus(t *testing.T) {
	n := 0
	d := &Daemon{quarantined: func() int { return n }}
	if s := d.quarantineStatus(); s != "" {
		t.Fatalf("status with nothing quarantined: %q", s)
	}
	n = 2
	if s := d.quarantineStatus(); !strings.Contains(s, "2 objects could not be programmed and fail closed") {
		t.Fatalf("status with 2 quarantined: %q", s)
	}
}
