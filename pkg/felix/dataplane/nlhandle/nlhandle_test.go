package nlhandle

import (
	"context"
	"errors"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestRetryDump(t *testing.T) {
	for _, failures := range []int{0, 3, maxDumpAttempts} {
		calls := 0
		v, err := RetryDump(context.Background(), func() (int, error) {
			calls++
			if calls <= failures {
				return 0, netlink.ErrDumpInterrupted
			}
			return 42, nil
		})
		wantErr := failures >= maxDumpAttempts
		if (err != nil) != wantErr || (!wantErr && v != 42) {
			t.Errorf("failures=%d: %d, %v", failures, v, err)
		}
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RetryDump(cctx, func() (int, error) { return 0, netlink.ErrDumpInterrupted }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
