package main

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

// stubDataplane completes its first apply when told to.
type stubDataplane struct {
	first chan struct{}
	ran   chan struct{}
}

func (s *stubDataplane) Run(ctx context.Context, _ <-chan []calc.Update, _ chan<- dataplane.EndpointStatus, _ func()) {
	close(s.ran)
	<-ctx.Done()
}
func (s *stubDataplane) FirstApplyDone() <-chan struct{}    { return s.first }
func (s *stubDataplane) Collectors() []prometheus.Collector { return nil }

// TestAfterFirstApply: the hook (felix's request to etcd) runs once, after the first apply and
// not before, and not at all when felix stops first.
func TestAfterFirstApply(t *testing.T) {
	for _, tc := range []struct {
		name       string
		applies    bool
		wantCalled bool
	}{
		{"first apply done", true, true},
		{"stopped before the first apply", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stub := &stubDataplane{first: make(chan struct{}), ran: make(chan struct{})}
			called := make(chan struct{}, 2)
			build := afterFirstApply(func(dataplane.Config, zerolog.Logger) (felix.Dataplane, error) { return stub, nil },
				func(context.Context) { called <- struct{}{} })
			dp, err := build(dataplane.Config{}, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { dp.Run(ctx, nil, nil, func() {}); close(done) }()
			<-stub.ran
			select {
			case <-called:
				t.Fatal("hook ran before the first apply")
			case <-time.After(50 * time.Millisecond):
			}
			if tc.applies {
				close(stub.first)
			} else {
				cancel()
			}
			select {
			case <-called:
				if !tc.wantCalled {
					t.Fatal("hook ran although felix stopped before its first apply")
				}
			case <-time.After(time.Second):
				if tc.wantCalled {
					t.Fatal("hook did not run after the first apply")
				}
			}
			cancel()
			<-done
			if len(called) > 0 {
				t.Fatal("hook ran more than once")
			}
		})
	}
}
