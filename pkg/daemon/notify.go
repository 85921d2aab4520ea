package daemon

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"
	"github.com/rs/zerolog"
)

// Notifier talks to systemd through $NOTIFY_SOCKET (a no-op when it is unset).
type Notifier struct {
	log      zerolog.Logger
	mu       sync.Mutex
	status   string
	ready    bool
	interval time.Duration
}

// NewNotifier reads the watchdog interval ($WATCHDOG_USEC) from the environment.
func NewNotifier(log zerolog.Logger) *Notifier {
	interval, err := sddaemon.SdWatchdogEnabled(false)
	if err != nil {
		log.Warn().Err(err).Msg("Ignoring invalid systemd watchdog settings")
	}
	return &Notifier{log: log, interval: interval}
}

func (n *Notifier) send(state string) {
	if _, err := sddaemon.SdNotify(false, state); err != nil {
		n.log.Debug().Err(err).Str("state", state).Msg("sd_notify failed")
	}
}

// Ready sends READY=1 once; later calls do nothing.
func (n *Notifier) Ready() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ready {
		return
	}
	n.ready = true
	n.send(sddaemon.SdNotifyReady)
	n.log.Info().Msg("Notified systemd: ready")
}

// IsReady reports whether Ready was sent.
func (n *Notifier) IsReady() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ready
}

// Status sends STATUS=<text> when it changed.
func (n *Notifier) Status(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	n.mu.Lock()
	defer n.mu.Unlock()
	if s == n.status {
		return
	}
	n.status = s
	n.send("STATUS=" + s)
}

// Stopping sends STOPPING=1.
func (n *Notifier) Stopping() { n.send(sddaemon.SdNotifyStopping) }

// WatchdogInterval is systemd's WatchdogSec, or 0 when the watchdog is off.
func (n *Notifier) WatchdogInterval() time.Duration { return n.interval }

func (n *Notifier) petWatchdog() { n.send(sddaemon.SdNotifyWatchdog) }

// SignalContext returns a context cancelled on SIGTERM or SIGINT.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
