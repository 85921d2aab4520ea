package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Watchdog pets systemd's watchdog only while every registered loop has made progress (called
// Beat) within the staleness limit, so a hung loop gets the process killed and restarted.
// Loops that wait for work should Beat on a timer too, so that idling is not mistaken for a hang.
type Watchdog struct {
	notifier *Notifier
	log      zerolog.Logger
	limit    time.Duration
	now      func() time.Time
	mu       sync.Mutex
	beats    map[string]time.Time
}

// DefaultStaleness is the staleness limit used when systemd's watchdog is off (for health checks).
const DefaultStaleness = 30 * time.Second

// NewWatchdog registers the named loops. The staleness limit is half systemd's watchdog interval
// (or DefaultStaleness when the watchdog is off).
func NewWatchdog(n *Notifier, log zerolog.Logger, loops ...string) *Watchdog {
	limit := n.WatchdogInterval() / 2
	if limit == 0 {
		limit = DefaultStaleness
	}
	w := &Watchdog{notifier: n, log: log, limit: limit, now: time.Now, beats: map[string]time.Time{}}
	for _, l := range loops {
		w.beats[l] = w.now()
	}
	return w
}

// Limit is how long a loop may go without a Beat before the daemon counts as unhealthy.
func (w *Watchdog) Limit() time.Duration { return w.limit }

// Beat records progress of one loop.
func (w *Watchdog) Beat(loop string) {
	w.mu.Lock()
	w.beats[loop] = w.now()
	w.mu.Unlock()
}

// Stale returns the loops that have not beaten within the limit.
func (w *Watchdog) Stale() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var stale []string
	now := w.now()
	for l, t := range w.beats {
		if now.Sub(t) > w.limit {
			stale = append(stale, l)
		}
	}
	return stale
}

// Healthy reports whether every loop beat recently.
func (w *Watchdog) Healthy() bool { return len(w.Stale()) == 0 }

// Run pets systemd every quarter of its watchdog interval while healthy. It returns when ctx is
// done, or at once when the watchdog is off.
func (w *Watchdog) Run(ctx context.Context) {
	interval := w.notifier.WatchdogInterval()
	if interval == 0 {
		return
	}
	t := time.NewTicker(interval / 4)
	defer t.Stop()
	for {
		if stale := w.Stale(); len(stale) == 0 {
			w.notifier.petWatchdog()
		} else {
			w.log.Error().Strs("loops", stale).Dur("limit", w.limit).Msg("Loops made no progress; not petting the systemd watchdog")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
