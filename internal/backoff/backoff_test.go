package backoff

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

func TestSequenceIsCappedExponential(t *testing.T) {
	b := &Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	var got []time.Duration
	for range 6 {
		got = append(got, b.Next())
	}
	ms := time.Millisecond
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second}
	if !slices.Equal(got, want) {
		t.Fatalf("delays %v, want %v", got, want)
	}
	for i, w := range want {
		if d := b.Delay(i); d != w {
			t.Errorf("Delay(%d) = %v, want %v", i, d, w)
		}
	}
	b.Reset()
	if d := b.Next(); d != 100*ms {
		t.Errorf("after Reset: %v, want Min", d)
	}
}

func TestJitterStaysInRange(t *testing.T) {
	for _, j := range []float64{0.5, 1} {
		b := &Backoff{Min: time.Second, Max: 8 * time.Second, Jitter: j}
		base := time.Second
		for i := range 200 {
			d := b.Next()
			lo := base - time.Duration(j*float64(base))
			if d < lo || d > base {
				t.Fatalf("jitter %v, delay %d = %v, want in [%v, %v]", j, i, d, lo, base)
			}
			base = min(2*base, 8*time.Second)
		}
	}
}

func TestEdgeCases(t *testing.T) {
	if d := (&Backoff{}).Next(); d != 0 {
		t.Errorf("zero Backoff: %v, want 0", d)
	}
	b := &Backoff{Min: time.Second, Max: time.Millisecond} // Max below Min counts as Min
	if d1, d2 := b.Next(), b.Next(); d1 != time.Second || d2 != time.Second {
		t.Errorf("Max < Min: %v %v, want Min twice", d1, d2)
	}
	huge := &Backoff{Min: time.Duration(math.MaxInt64 / 3), Max: time.Duration(math.MaxInt64)}
	for range 5 {
		if d := huge.Next(); d <= 0 {
			t.Fatalf("overflowed to %v", d)
		}
	}
}

func TestWaitEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := &Backoff{Min: time.Hour, Max: time.Hour}
	if err := b.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait on a cancelled context: %v", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep: %v", err)
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(0) on a cancelled context: %v", err)
	}
}

// TestJitterSpreads: many draws at the cap are not all equal.
func TestJitterSpreads(t *testing.T) {
	b := &Backoff{Min: time.Second, Max: time.Second, Jitter: 0.5}
	seen := map[time.Duration]bool{}
	for range 50 {
		seen[b.Next()] = true
	}
	if len(seen) < 10 {
		t.Errorf("only %d distinct delays in 50 draws: no jitter", len(seen))
	}
}
