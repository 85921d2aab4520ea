package calicoctl

import (
	"strings"
	"testing"
)

// TestGlobalOptionsAfterTheCommand: as with Project Calico's persistent options, -l/--log-level,
// --context and --allow-version-mismatch are accepted after any command, and a bad log level
// is refused with Calico's message.
func TestGlobalOptionsAfterTheCommand(t *testing.T) {
	h := newHarness(t)
	for _, args := range [][]string{
		{"get", "ippools", "-l", "debug", "--context", "x", "--allow-version-mismatch"},
		{"ipam", "show", "--log-level=warning"},
		{"node", "checksystem", "--help", "--context=y"},
	} {
		h.ok("", args...)
	}
	for _, args := range [][]string{
		{"get", "ippools", "-l", "loud"},
		{"--log-level=loud", "get", "ippools"},
	} {
		if r := h.fail("", args...); !strings.HasPrefix(r.stderr, "unknown log level: loud, expected one of: panic, fatal, error, warn, info, debug") {
			t.Errorf("%v: %q", args, r.stderr)
		}
	}
}
