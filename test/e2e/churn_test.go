package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

// churn counts what happened to the containers.
type churn struct {
	done, addFailed, delRetries atomic.Int64
}

// TestCNIChurn: 500 containers added and deleted through the CNI plugin on three hosts, with
// etcd restarted three times in between. Afterwards nothing is left: no IPAM allocation or
// handle, no WorkloadEndpoint, no cali veth, and "calicoctl ipam check" is clean.
func TestCNIChurn(t *testing.T) {
	requireBinaries(t)
	const total, workersPerHost, restarts = 500, 3, 3
	s := newSystem(t, topo.Options{Hosts: 3, Mode: topo.ModeBGP}, topo.StartOptions{Felix: true})
	var c churn
	next := atomic.Int64{}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Minute)
	defer cancel()
	restarter := s.restartEtcdEvery(ctx, &c, total/(restarts+1), restarts)
	start := time.Now()
	var wg sync.WaitGroup
	for _, h := range s.Hosts {
		for range workersPerHost {
			wg.Go(func() {
				for ctx.Err() == nil && next.Add(1) <= total {
					if err := s.oneContainer(ctx, h, &c); err != nil {
						t.Error(err)
						cancel()
					}
				}
			})
		}
	}
	wg.Wait()
	<-restarter
	took := time.Since(start)
	t.Logf("%d containers in %s (%.1f ADD+DEL per second), %d ADDs failed during etcd restarts, %d DEL retries",
		c.done.Load(), took.Round(time.Second), float64(c.done.Load())/took.Seconds(), c.addFailed.Load(), c.delRetries.Load())
	if t.Failed() {
		return
	}
	s.checkNoLeaks()
}

// oneContainer creates a container namespace, adds it (a failed ADD is deleted, as a runtime
// does), deletes it, retrying DEL until it succeeds, and removes the namespace.
func (s *system) oneContainer(ctx context.Context, h *topo.Host, c *churn) error {
	id, ns, err := h.NewContainerNetns(ctx)
	if err != nil {
		return err
	}
	defer ns.Delete()
	if _, err := h.CNI(ctx, "ADD", id, ns.Path()); err != nil {
		c.addFailed.Add(1)
	}
	err = topo.Eventually(ctx, 2*time.Minute, time.Second, func() error {
		_, err := h.CNI(ctx, "DEL", id, ns.Path())
		if err != nil {
			c.delRetries.Add(1)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: DEL %s never succeeded: %w", h.Name, id, err)
	}
	c.done.Add(1)
	return nil
}

// restartEtcdEvery kills etcd each time another `every` containers are done, keeps it down
// for 4 s and starts it again, n times. The returned channel closes when it is finished.
func (s *system) restartEtcdEvery(ctx context.Context, c *churn, every, n int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= n; i++ {
			for c.done.Load() < int64(i*every) {
				select {
				case <-ctx.Done():
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
			s.Etcd.Members[0].Kill()
			time.Sleep(4 * time.Second)
			if err := s.Etcd.Start(ctx); err != nil {
				s.t.Errorf("restarting etcd: %v", err)
				return
			}
			s.t.Logf("etcd restarted after %d containers", c.done.Load())
		}
	}()
	return done
}

// checkNoLeaks asserts the datastore and the hosts hold nothing of the containers.
func (s *system) checkNoLeaks() {
	s.t.Helper()
	ds, err := s.Datastore()
	if err != nil {
		s.t.Fatal(err)
	}
	for _, prefix := range []string{"/calico/ipam/v2/handle/", resources + "workloadendpoints/"} {
		kvs, _, err := ds.ListKV(s.ctx, prefix, 0)
		if err != nil {
			s.t.Fatal(err)
		}
		for _, kv := range kvs {
			s.t.Errorf("leaked: %s", kv.Key)
		}
	}
	out := s.calicoctl("ipam", "check")
	s.t.Logf("calicoctl ipam check:\n%s", out)
	for _, want := range []string{"IPAM blocks record 0 allocations.", "Check complete; found 0 problems."} {
		if !strings.Contains(out, want) {
			s.t.Errorf("calicoctl ipam check does not say %q", want)
		}
	}
	for _, h := range s.Hosts {
		links, err := h.Exec(s.ctx, "ip", "-o", "link", "show")
		if err != nil {
			s.t.Fatal(err)
		}
		if strings.Contains(links, "cali") {
			s.t.Errorf("%s: cali interfaces left:\n%s", h.Name, links)
		}
		if err := h.FelixReady(s.ctx); err != nil {
			s.t.Error(err)
		}
		s.eventually(30*time.Second, h.Name+": felix programs no endpoint", func() error {
			n, err := h.Metric(s.ctx, "felix_dataplane_endpoints")
			if err == nil && n != 0 {
				err = fmt.Errorf("felix_dataplane_endpoints = %v", n)
			}
			return err
		})
	}
}
