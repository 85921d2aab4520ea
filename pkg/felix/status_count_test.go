package felix

import (
	"context"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

// TestStatusCounts: the programmed and up counts follow endpoints changing status, repeating a
// status and being removed (the count is kept per change, so a wrong delta accumulates).
func TestStatusCounts(t *testing.T) {
	d := &Daemon{}
	in := make(chan dataplane.EndpointStatus)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.consumeStatuses(ctx, in); close(done) }()
	defer func() { cancel(); <-done }()
	wl := func(id, st string) dataplane.EndpointStatus {
		return dataplane.EndpointStatus{Workload: &calc.WorkloadEndpointID{OrchestratorID: "openstack", WorkloadID: id, EndpointID: "eth0"}, Status: st}
	}
	steps := []struct {
		st             dataplane.EndpointStatus
		programmed, up int64
	}{
		{wl("a", "up"), 1, 1},
		{wl("b", "down"), 2, 1},
		{wl("a", "up"), 2, 1},
		{dataplane.EndpointStatus{HostEndpoint: "eth1", Status: "up"}, 3, 2},
		{wl("b", "up"), 3, 3},
		{wl("a", "down"), 3, 2},
		{wl("a", ""), 2, 2},
		{wl("b", ""), 1, 1},
		{dataplane.EndpointStatus{HostEndpoint: "eth1"}, 0, 0},
	}
	for i, s := range steps {
		in <- s.st
		deadline := time.Now().Add(5 * time.Second)
		for (d.programmed.Load() != s.programmed || d.up.Load() != s.up) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if p, u := d.programmed.Load(), d.up.Load(); p != s.programmed || u != s.up {
			t.Fatalf("step %d: programmed %d up %d, want %d %d", i, p, u, s.programmed, s.up)
		}
	}
}
