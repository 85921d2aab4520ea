package felix

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/syncer"
	"github.com/calico-host/calico-host/pkg/trace"
)

// pendingSettle is how long the pending feed lets a burst of changes settle before it
// rebuilds its evaluator.
const pendingSettle = 200 * time.Millisecond

// pendingFeed gives the flow collector its pending verdicts (collector.Config.Pending): the
// syncer's messages are given to it by calc before calc applies them (a short lock and an
// append: calc never waits for a rebuild), and its own goroutine rebuilds a trace.PendingEvaluator from them when
// they changed, and at least every 0.8 × FlowLogsFlushInterval (felix's re-evaluation period).
// Until run or drop, it keeps what it is given (the snapshot arrives before felix knows whether
// flow logs are on).
type pendingFeed struct {
	mu      sync.Mutex
	queue   []syncer.Message // not yet given to the source
	dropped bool             // flow logs or staged evaluation off: messages are not kept
	changed chan struct{}    // one pending signal at most

	cur atomic.Pointer[trace.PendingEvaluator]
}

func newPendingFeed() *pendingFeed {
	return &pendingFeed{changed: make(chan struct{}, 1)}
}

// add keeps a copy of one of the syncer's messages (calc's Tee, on calc's goroutine: a short
// lock and an append).
func (p *pendingFeed) add(m syncer.Message) {
	if len(m.Updates) == 0 && !m.Snapshot {
		return
	}
	p.mu.Lock()
	if !p.dropped {
		p.queue = append(p.queue, m)
	}
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// drop stops keeping messages: felix evaluates no pending verdicts.
func (p *pendingFeed) drop() {
	p.mu.Lock()
	p.dropped, p.queue = true, nil
	p.mu.Unlock()
}

func (p *pendingFeed) take() []syncer.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queue
	p.queue = nil
	return q
}

// evaluate is the collector's Pending hook (on the collector's goroutine): no verdict until the
// first evaluator is built.
func (p *pendingFeed) evaluate(t flowlog.Tuple, dir ruleid.Direction) ([]flowlog.PolicyHit, bool) {
	e := p.cur.Load()
	if e == nil {
		return nil, false
	}
	return e.Evaluate(t, dir)
}

// run rebuilds the evaluator of host until ctx ends. A snapshot that cannot be built keeps the
// previous evaluator (logged): pending verdicts observe, they never decide.
func (p *pendingFeed) run(ctx context.Context, host string, period time.Duration, log zerolog.Logger) {
	src := trace.NewPendingSource(host, log)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		for _, m := range p.take() {
			src.OnMessage(m)
		}
		e, err := src.Evaluator()
		if err != nil {
			log.Warn().Err(err).Msg("Building the pending verdicts of staged policies failed; keeping the previous ones")
		} else {
			p.cur.Store(e)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-p.changed:
			select { // let the burst settle
			case <-ctx.Done():
				return
			case <-time.After(pendingSettle):
			}
		}
	}
}
