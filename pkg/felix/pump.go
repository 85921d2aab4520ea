package felix

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// forwardSyncer passes the syncer's messages to calc, counting them, and reports the syncer
// loop's progress: on every message, and on a timer while waiting for one (an idle datastore is
// not a hang; the syncer retries etcd on its own) or while calc is busy (calc's own beats cover
// calc). pkg/syncer has no progress callback, so a syncer stuck inside its own goroutine is not
// detected here.
func (d *Daemon) forwardSyncer(ctx context.Context, in <-chan syncer.Message, out chan<- syncer.Message) {
	tick := time.NewTicker(d.o.IdleBeat)
	defer tick.Stop()
	var pending chan<- syncer.Message // out while a message waits to be delivered, else nil
	var msg syncer.Message
	for {
		d.wd.Beat(LoopSyncer)
		recv := in
		if pending != nil {
			recv = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case m := <-recv:
			d.countSyncerMessage(m)
			msg, pending = m, out
		case pending <- msg:
			msg, pending = syncer.Message{}, nil
		}
	}
}

func (d *Daemon) countSyncerMessage(m syncer.Message) {
	d.metrics.syncerStatus.Set(float64(m.Status))
	if m.Snapshot {
		d.metrics.resyncs.Inc()
		d.log.Info().Int("keys", len(m.Updates)).Int64("revision", m.Revision).Msg("Datastore snapshot received")
		return
	}
	d.metrics.watchEvents.Add(float64(len(m.Updates)))
}

// pump replays the batches collected during startup into the dataplane, then forwards calc's
// batches as they come, checking each for configuration changes first.
func (d *Daemon) pump(ctx context.Context, pending [][]calc.Update, calcOut <-chan []calc.Update, dpIn chan<- []calc.Update) error {
	for _, b := range pending {
		if !send(ctx, dpIn, b) {
			return nil
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case b := <-calcOut:
			d.metrics.batches.Observe(float64(len(b)))
			d.model.apply(b)
			d.countEndpoints()
			if err := d.checkConfig(); err != nil {
				return err
			}
			if !send(ctx, dpIn, b) {
				return nil
			}
		}
	}
}

func send(ctx context.Context, ch chan<- []calc.Update, b []calc.Update) bool {
	select {
	case ch <- b:
		return true
	case <-ctx.Done():
		return false
	}
}

// checkConfig applies live configuration changes and returns a restart error for the others:
// a restart parameter changed, the datastore is no longer ready, or the dataplane's
// configuration (including the pool-derived encapsulation) differs from the one it runs with.
func (d *Daemon) checkConfig() error {
	next := d.cfg
	if d.model.cfgDirty {
		ds := d.model.takeConfig()
		if !ds.Cluster.DatastoreReady {
			return d.restart("ClusterInformation default no longer has datastoreReady: true")
		}
		next = d.resolve(ds)
		restart, live := d.cfg.Changed(next)
		if len(restart) > 0 {
			return d.restart("changed: " + strings.Join(restart, ", "))
		}
		if len(live) > 0 {
			d.log.Info().Strs("params", live).Msg("Applying configuration change")
		}
	}
	if dp := next.Dataplane(d.model.poolsUseVXLAN()); !reflect.DeepEqual(dp, d.dpCfg) {
		return d.restart(fmt.Sprintf("dataplane configuration changed (VXLAN %t -> %t, OpenStack %t -> %t)",
			d.dpCfg.VXLANEnabled, dp.VXLANEnabled, d.dpCfg.OpenStack, dp.OpenStack))
	}
	if next != d.cfg {
		d.cfg = next
		d.applyLive()
	}
	return nil
}

// applyLive applies the parameters that change without a restart.
func (d *Daemon) applyLive() {
	d.applyLogLevel()
	d.agent.SetIntervals(d.cfg.ReportingInterval, d.cfg.ReportingTTL)
	if d.endpoints != nil {
		d.endpoints.SetDelay(d.cfg.EndpointReportingDelay)
	}
}

func (d *Daemon) countEndpoints() {
	d.workloads.Store(int64(len(d.model.workloads)))
	d.hosts.Store(int64(len(d.model.hosts)))
	d.metrics.endpoints.WithLabelValues("workload").Set(float64(len(d.model.workloads)))
	d.metrics.endpoints.WithLabelValues("host").Set(float64(len(d.model.hosts)))
}

// consumeStatuses passes the dataplane's endpoint statuses to the reporters and counts them.
func (d *Daemon) consumeStatuses(ctx context.Context, in <-chan dataplane.EndpointStatus) {
	current := map[string]string{}
	for {
		select {
		case <-ctx.Done():
			return
		case st := <-in:
			key := st.HostEndpoint
			if st.Workload != nil {
				key = st.Workload.OrchestratorID + "/" + st.Workload.WorkloadID + "/" + st.Workload.EndpointID
			}
			if st.Status == "" {
				delete(current, key)
			} else {
				current[key] = st.Status
			}
			d.programmed.Store(int64(len(current)))
			d.up.Store(int64(countUp(current)))
			if d.endpoints != nil {
				d.endpoints.Report(st)
			}
			if d.files != nil {
				d.files.Report(st)
			}
		}
	}
}

func countUp(m map[string]string) int {
	n := 0
	for _, s := range m {
		if s == "up" {
			n++
		}
	}
	return n
}

// awaitFirstApply tells systemd READY=1 once the dataplane completed its first full apply.
func (d *Daemon) awaitFirstApply(ctx context.Context, dp Dataplane) {
	select {
	case <-ctx.Done():
		return
	case <-dp.FirstApplyDone():
	}
	d.ready.Store(true)
	d.metrics.ready.Set(1)
	d.notifier.Status("%s", d.runningStatus())
	d.notifier.Ready()
	if d.endpoints != nil {
		d.endpoints.Synced()
	}
	if d.files != nil {
		d.files.Synced()
	}
	d.log.Info().Int64("workload_endpoints", d.workloads.Load()).Int64("host_endpoints", d.hosts.Load()).
		Dur("since_start", time.Since(d.o.Started)).Msg("Dataplane programmed; ready")
}

// reportStatus keeps systemd's STATUS line current once the dataplane runs.
func (d *Daemon) reportStatus(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		d.notifier.Status("%s", d.runningStatus())
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (d *Daemon) runningStatus() string {
	known := fmt.Sprintf("%d workload and %d host endpoints", d.workloads.Load(), d.hosts.Load())
	switch st := d.o.Syncer.Status(); {
	case !d.ready.Load():
		return "Programming the dataplane: " + known
	case st == syncer.WaitingForDatastore:
		return fmt.Sprintf("Datastore unreachable; the dataplane keeps the last applied state (%d endpoints programmed)",
			d.programmed.Load())
	case st != syncer.InSync:
		return fmt.Sprintf("Resyncing with the datastore; %d endpoints programmed", d.programmed.Load())
	}
	return fmt.Sprintf("In sync: %d endpoints programmed (%d up); %s", d.programmed.Load(), d.up.Load(), known)
}
