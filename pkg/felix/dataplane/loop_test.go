package dataplane

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ifaces"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/fake"
)

// runner runs a Dataplane's loop on fakes.
type runner struct {
	*harness
	flaky    *flakyBackend
	in       chan []calc.Update
	status   chan EndpointStatus
	progress atomic.Int64
	cancel   context.CancelFunc
	done     chan struct{}
}

func startRunner(t *testing.T, cfg Config, timing Timing, initial ...ifaces.Update) *runner {
	t.Helper()
	h := &harness{t: t, fake: fake.New(), routes: &fakeRoutes{}, ifaces: newFakeIfaces(initial...), vxlan: &fakeVXLAN{}}
	flaky := &flakyBackend{Backend: h.fake}
	dp, err := New(FelixDefaults(cfg), testLogger(t), WithNFTBackend(flaky), WithRoutes(h.routes), WithInterfaces(h.ifaces), WithVXLAN(h.vxlan), h.ipipOption(), WithTiming(timing))
	if err != nil {
		t.Fatal(err)
	}
	h.dp = dp
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{harness: h, flaky: flaky, in: make(chan []calc.Update, 16), status: make(chan EndpointStatus, 16), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		dp.Run(ctx, r.in, r.status, func() { r.progress.Add(1) })
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// flakyBackend fails the commits it is told to fail (with errors that are not a refusal of the
// batch, as a lost netlink socket would), and counts the attempts.
type flakyBackend struct {
	nft.Backend
	mu    sync.Mutex
	fail  []error
	tries int
}

func (f *flakyBackend) failNext(errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = append(f.fail, errs...)
}

func (f *flakyBackend) attempts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries
}

func (f *flakyBackend) Commit(ctx context.Context, b *nft.Batch) (nft.CommitInfo, error) {
	f.mu.Lock()
	f.tries++
	if len(f.fail) > 0 {
		err := f.fail[0]
		f.fail = f.fail[1:]
		f.mu.Unlock()
		return nft.CommitInfo{}, err
	}
	f.mu.Unlock()
	return f.Backend.Commit(ctx, b)
}

// waitFor polls cond until it holds or the test times out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRunWaitsForInSyncThenApplies(t *testing.T) {
	r := startRunner(t, Config{Hostname: "host1"}, Timing{}, iface("cali1a2b3c4d5e6", true))
	r.in <- example19()
	time.Sleep(50 * time.Millisecond)
	if r.fake.Commits() != 0 {
		t.Fatalf("applied before calc was in sync")
	}
	select {
	case <-r.dp.FirstApplyDone():
		t.Fatal("FirstApplyDone closed before any apply")
	default:
	}
	r.in <- []calc.Update{calc.InSync{}}
	select {
	case <-r.dp.FirstApplyDone():
	case <-time.After(5 * time.Second):
		t.Fatal("FirstApplyDone not closed after InSync")
	}
	if !strings.Contains(r.fake.Dump(), `"cali1a2b3c4d5e6" : goto filter-cali-tw-`) {
		t.Errorf("the endpoint was not programmed")
	}
	select {
	case st := <-r.status:
		if st.Workload == nil || *st.Workload != wepID("w1") || st.Status != "up" {
			t.Errorf("status %+v, want w1 up", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no endpoint status")
	}
	if r.progress.Load() < 2 {
		t.Errorf("progress called %d times", r.progress.Load())
	}
}

func TestRunWaitsForInterfaceMonitor(t *testing.T) {
	r := startRunner(t, Config{Hostname: "host1"}, Timing{})
	// The fake monitor sends InSync at once; an interface update afterwards is applied too.
	r.in <- append(example19(), calc.InSync{})
	<-r.dp.FirstApplyDone()
	r.ifaces.updates <- iface("cali1a2b3c4d5e6", true)
	waitFor(t, "the status to turn up", func() bool {
		for {
			select {
			case st := <-r.status:
				if st.Status == "up" {
					return true
				}
			default:
				return false
			}
		}
	})
	if got := r.ifaces.configuredList(); len(got) != 1 {
		t.Errorf("configured %v, want the workload interface once", got)
	}
}

func TestRunRetriesFailedApplyWithFullSync(t *testing.T) {
	r := startRunner(t, Config{Hostname: "host1"}, Timing{RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond})
	r.flaky.failNext(errors.New("boom"), errors.New("boom again"))
	r.in <- append(example19(), calc.InSync{})
	select {
	case <-r.dp.FirstApplyDone():
	case <-time.After(5 * time.Second):
		t.Fatal("never recovered from failed commits")
	}
	if r.flaky.attempts() != 3 || r.fake.Commits() != 1 {
		t.Errorf("%d commits attempted, %d committed; want 2 failures and 1 success", r.flaky.attempts(), r.fake.Commits())
	}
	// Drift: the table is deleted behind our back; the next refresh repairs it.
	want := r.fake.Dump()
	r.fake.Tamper(nft.TableID{Family: nft.FamilyIP, Name: DefaultTable}, func(*nft.Table) *nft.Table { return nil })
	r.dp.nft.RequestFullSync()
	r.in <- nil
	waitFor(t, "the table to be repaired", func() bool { return r.fake.Dump() == want })
}

func TestRunThrottles(t *testing.T) {
	r := startRunner(t, Config{Hostname: "host1"}, Timing{Burst: 2, Refill: time.Hour})
	r.in <- []calc.Update{calc.InSync{}}
	<-r.dp.FirstApplyDone()
	for i := range 5 {
		r.in <- []calc.Update{ipset("s:x", pfx("10.65.0.0/24").String())}
		r.in <- []calc.Update{calc.IPPoolUpdate{Pool: &calc.IPPool{Name: "p", CIDR: pfx("10.65.0.0/16"), NATOutgoing: i%2 == 0}}}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if n := r.fake.Commits(); n != 2 {
		t.Errorf("%d commits with a bucket of 2 and no refill, want 2", n)
	}
}
