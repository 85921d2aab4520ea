package syncer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// Syncer lists and watches a set of key prefixes and streams the result (see the package doc).
//
// The stream: a WaitingForDatastore status message; once etcd answers, ResyncInProgress; the
// snapshot (status InSync); then batches of updates. When etcd stops answering (see
// Config.LivenessTimeout) it sends WaitingForDatastore and retries with capped exponential
// backoff, or at once when the connection comes back; the consumer keeps its model, and once etcd
// answers the watch resumes from the revision the consumer has, with InSync as soon as etcd
// confirms the new watch. Other watch failures (closed channel, watch error, "no leader", or a
// watch that stays silent past Config.WatchTimeout) also resume the watch from that revision.
// Only when that history is gone (compacted, or etcd's revision went backwards) does it send
// ResyncInProgress and a new snapshot. A status message is sent only when the status changes.
type Syncer struct {
	etcd   *clientv3.Client
	cfg    Config
	log    zerolog.Logger
	status atomic.Int32

	// streamKey gives this syncer's watches their own gRPC watch stream, so that progress requests
	// and their broadcast answers concern only our watches.
	streamKey string

	// sent is the status of the last message sent (-1 before the first one).
	sent Status
	// rev is the highest revision delivered to the consumer.
	rev int64
	// listed: a snapshot was delivered (a later list is a re-list); listedAt is etcd's revision
	// when the last one was listed (at or after the snapshot's own revision).
	listed   bool
	listedAt int64
	// resume is, per prefix, the revision up to which the consumer has every change: the next
	// watch of the prefix starts after it. nil while the consumer needs a snapshot.
	resume map[string]int64
	// catch is what the consumer still needs after a snapshot listed at a rounded revision
	// before it is InSync (nil: nothing).
	catch *catchUp
}

var syncerIDs atomic.Int64

// New returns a syncer for cli. It panics if cfg.Prefixes is empty (a programming error).
func New(cli *datastore.Client, cfg Config, log zerolog.Logger) *Syncer {
	cfg = cfg.withDefaults()
	if len(cfg.Prefixes) == 0 {
		panic("syncer: Config.Prefixes is empty")
	}
	return &Syncer{
		etcd:      cli.Etcd(),
		cfg:       cfg,
		log:       log,
		streamKey: fmt.Sprintf("syncer-%d", syncerIDs.Add(1)),
		sent:      -1,
	}
}

// Status returns the syncer's current status. It is safe to call from any goroutine.
func (s *Syncer) Status() Status { return Status(s.status.Load()) }

// Run streams Messages to out until ctx is done; it never returns before that and never closes
// out. Sends block (a slow consumer slows the syncer down, it never loses data). Call it once.
func (s *Syncer) Run(ctx context.Context, out chan<- Message) {
	// Each delay is drawn from [d/2, d].
	b := &backoff.Backoff{Min: s.cfg.MinBackoff, Max: s.cfg.MaxBackoff, Jitter: 0.5}
	s.setStatus(ctx, out, WaitingForDatastore)
	failures := 0
	for ctx.Err() == nil {
		healthy, err := s.syncOnce(ctx, out)
		if ctx.Err() != nil {
			return
		}
		if healthy {
			b.Reset()
			failures = 0
		}
		failures++
		delay := b.Next()
		ev := s.log.Debug()
		if failures == 1 || failures%20 == 0 { // no log flood while etcd is down
			ev = s.log.Warn()
		}
		ev.Err(err).Int("attempt", failures).Dur("retry_in", delay).Bool("resync", s.resume == nil).
			Msg("datastore sync interrupted, resuming")
		if !s.pause(ctx, delay) {
			return
		}
	}
}

// syncOnce resumes the watch from the revisions the consumer has or, when it has none (or that
// history is gone), lists every prefix at one revision and delivers the snapshot; then it watches
// until the watch fails. healthy reports whether the watch worked (then the backoff restarts from
// its minimum).
func (s *Syncer) syncOnce(ctx context.Context, out chan<- Message) (healthy bool, err error) {
	if s.resume != nil {
		err := s.checkResume(ctx)
		switch {
		case needsResync(err):
			s.log.Info().Err(err).Int64("revision", s.resumeFrom()).
				Msg("history since the consumer's revision is gone; re-listing")
			s.resume = nil
		case err != nil:
			s.setStatus(ctx, out, WaitingForDatastore)
			return false, fmt.Errorf("contacting etcd: %w", err)
		default:
			return s.watchAndReport(ctx, out)
		}
	}
	if s.listed && !s.spreadResync(ctx) {
		return false, ctx.Err()
	}
	cur, err := s.currentRevision(ctx)
	if err != nil {
		s.setStatus(ctx, out, WaitingForDatastore)
		return false, fmt.Errorf("contacting etcd: %w", err)
	}
	s.setStatus(ctx, out, ResyncInProgress)
	start := time.Now()
	snap, rev, err := s.listAt(ctx, cur)
	if err != nil {
		if !errors.Is(err, rpctypes.ErrCompacted) { // compacted while listing: just list again
			s.setStatus(ctx, out, WaitingForDatastore)
		}
		return false, err
	}
	s.log.Info().Int("keys", len(snap)).Int64("revision", rev).Int64("current_revision", cur).
		Dur("duration", time.Since(start)).Strs("prefixes", s.cfg.Prefixes).Msg("resync: listed datastore")
	status := InSync
	if s.catch != nil {
		status = ResyncInProgress // until the watch delivered every change up to cur
	}
	if !s.send(ctx, out, Message{Status: status, Snapshot: true, Updates: snap, Revision: rev}) {
		return false, ctx.Err()
	}
	s.listed, s.listedAt = true, cur
	s.resume = make(map[string]int64, len(s.cfg.Prefixes))
	for _, p := range s.cfg.Prefixes {
		s.resume[p] = rev
	}
	return s.watchAndReport(ctx, out)
}

// listAt lists every prefix at the revision listRevision chooses for cur (at cur itself when
// that one is compacted). Listed before cur, the consumer is not in sync until the watch has
// delivered every change up to cur: listAt reads what that takes (s.catch; nil when the list is
// current already).
func (s *Syncer) listAt(ctx context.Context, cur int64) ([]Update, int64, error) {
	s.catch = nil
	rev := s.listRevision(cur)
	snap, counts, err := s.list(ctx, rev)
	if errors.Is(err, rpctypes.ErrCompacted) && rev < cur { // the rounded revision is gone: list at the current one
		rev = cur
		snap, counts, err = s.list(ctx, rev)
	}
	if err != nil || rev == cur {
		return snap, rev, err
	}
	c, err := s.readCatchUp(ctx, rev, cur, counts)
	if err != nil {
		return nil, 0, err
	}
	if !c.caughtUp() {
		s.catch = c
	}
	return snap, rev, nil
}

// spreadResync waits a random time up to ResyncSpread before a re-list (see Config.ResyncSpread);
// it reports false if ctx ended first.
func (s *Syncer) spreadResync(ctx context.Context) bool {
	if s.cfg.ResyncSpread <= 0 {
		return true
	}
	d := rand.N(s.cfg.ResyncSpread)
	s.log.Debug().Dur("delay", d).Msg("spreading the re-list")
	return backoff.Sleep(ctx, d) == nil
}

// watchAndReport watches until the watch fails. A compaction of the history it needs drops the
// consumer's revisions (the next attempt re-lists); a lost etcd is reported to the consumer.
func (s *Syncer) watchAndReport(ctx context.Context, out chan<- Message) (bool, error) {
	healthy, err := s.watch(ctx, out)
	switch {
	case ctx.Err() != nil:
	case needsResync(err):
		s.resume = nil
	case s.catch != nil:
		// The catch-up counted changes the next watch would deliver again: list again.
		s.resume, s.catch = nil, nil
	case errors.Is(err, errUnreachable):
		s.setStatus(ctx, out, WaitingForDatastore)
	}
	return healthy, err
}

// checkResume checks that etcd answers and still has the history the watch resumes from: a
// count-only read at the oldest revision the consumer has. It fails with a compaction error when
// that history is gone and with a future-revision error when etcd's revision went backwards
// (restored from a backup).
func (s *Syncer) checkResume(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	key, _ := prefixRange(s.cfg.Prefixes[0])
	_, err := s.etcd.Get(rctx, key, clientv3.WithCountOnly(), clientv3.WithRev(s.resumeFrom()))
	return err
}

// resumeFrom is the oldest revision the consumer has of any prefix.
func (s *Syncer) resumeFrom() int64 {
	var oldest int64
	for _, r := range s.resume {
		if oldest == 0 || r < oldest {
			oldest = r
		}
	}
	return oldest
}

// needsResync reports whether err means the consumer's revision can no longer be resumed from.
func needsResync(err error) bool {
	return errors.Is(err, rpctypes.ErrCompacted) || errors.Is(err, rpctypes.ErrFutureRev)
}

// currentRevision asks etcd for its current revision with a cheap single-key count (a
// linearizable read, so it also fails on a member without a leader). It is both the probe that
// etcd is reachable and the revision every prefix is listed at.
func (s *Syncer) currentRevision(ctx context.Context) (int64, error) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	key, _ := prefixRange(s.cfg.Prefixes[0])
	resp, err := s.etcd.Get(rctx, key, clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// setStatus records the status and, if it differs from the last one sent, tells the consumer.
func (s *Syncer) setStatus(ctx context.Context, out chan<- Message, st Status) {
	s.status.Store(int32(st))
	if st != s.sent {
		s.send(ctx, out, Message{Status: st, Revision: s.rev})
	}
}

// send delivers m, blocking until the consumer takes it or ctx is done.
func (s *Syncer) send(ctx context.Context, out chan<- Message, m Message) bool {
	select {
	case out <- m:
		s.delivered(m)
		return true
	case <-ctx.Done():
		return false
	}
}

// delivered records what the consumer now has.
func (s *Syncer) delivered(m Message) {
	s.sent = m.Status
	s.status.Store(int32(m.Status))
	s.rev = max(s.rev, m.Revision)
	if m.Snapshot {
		s.rev = m.Revision
	}
}

// watchContext is the context of one watch generation: leader required, own gRPC stream.
func (s *Syncer) watchContext(ctx context.Context) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancel(ctx)
	wctx = metadata.AppendToOutgoingContext(wctx, "calico-host-syncer", s.streamKey)
	return clientv3.WithRequireLeader(wctx), cancel
}

// pause waits d before the next attempt, but no longer than until the gRPC connection to etcd
// comes back up (so that a returning etcd is used at once, not after the backoff). It reports
// false when ctx ended.
func (s *Syncer) pause(ctx context.Context, d time.Duration) bool {
	conn := s.etcd.ActiveConnection()
	if conn == nil || conn.GetState() == connectivity.Ready {
		return backoff.Sleep(ctx, d) == nil
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for st := conn.GetState(); st != connectivity.Ready; st = conn.GetState() {
		if st == connectivity.Idle {
			conn.Connect()
		}
		if !conn.WaitForStateChange(wctx, st) {
			break
		}
	}
	return ctx.Err() == nil
}

// connDown reports whether the gRPC connection to etcd is not usable (connecting, failing, idle or
// shut down). Without a connection (a client built for tests) it is never down.
func (s *Syncer) connDown() bool {
	conn := s.etcd.ActiveConnection()
	return conn != nil && conn.GetState() != connectivity.Ready
}

// Why a watch ended, besides etcd's own errors.
var (
	// errWatchClosed means a watch channel closed without an error.
	errWatchClosed = errors.New("watch channel closed")
	// errUnreachable means etcd gave no sign of life within the liveness timeout.
	errUnreachable = errors.New("etcd unreachable")
)
