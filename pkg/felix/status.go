package felix

import (
	"context"
	"fmt"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/dataplane"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// consumeStatuses passes the dataplane's endpoint statuses to the reporters and counts them.
func (d *Daemon) consumeStatuses(ctx context.Context, in <-chan dataplane.EndpointStatus) {
	current := map[string]string{}
	var up int64 // endpoints whose status is "up", kept as statuses change (no scan per status)
	for {
		select {
		case <-ctx.Done():
			return
		case st := <-in:
			key := st.HostEndpoint
			if st.Workload != nil {
				key = st.Workload.OrchestratorID + "/" + st.Workload.WorkloadID + "/" + st.Workload.EndpointID
			}
			up += upDelta(current[key], st.Status)
			if st.Status == "" {
				delete(current, key)
			} else {
				current[key] = st.Status
			}
			d.programmed.Store(int64(len(current)))
			d.up.Store(up)
			if d.endpoints != nil {
				d.endpoints.Report(st)
			}
			if d.files != nil {
				d.files.Report(st)
			}
		}
	}
}

// upDelta is the change in the number of endpoints that are up when one's status goes from old
// to cur ("" when absent).
func upDelta(old, cur string) int64 {
	var d int64
	if old == "up" {
		d--
	}
	if cur == "up" {
		d++
	}
	return d
}

// awaitFirstApply tells systemd READY=1 once the dataplane completed its first full apply, and
// then makes the request to etcd that lets conntrack pick up felix's connection (see
// pokeDatastore).
func (d *Daemon) awaitFirstApply(ctx context.Context, dp Dataplane) {
	select {
	case <-ctx.Done():
		return
	case <-dp.FirstApplyDone():
	}
	d.wg.Go(func() { d.o.afterFirstApply(ctx) })
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
	f := d.calc.Facts()
	d.log.Info().Int("workload_endpoints", f.Workloads).Int("host_endpoints", f.HostEndpoints).
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
	f := d.calc.Facts()
	known := fmt.Sprintf("%d workload and %d host endpoints", f.Workloads, f.HostEndpoints)
	switch st := d.o.Syncer.Status(); {
	case !d.ready.Load():
		return "Programming the dataplane: " + known
	case st == syncer.WaitingForDatastore:
		return fmt.Sprintf("Datastore unreachable; the dataplane keeps the last applied state (%d endpoints programmed)",
			d.programmed.Load())
	case st != syncer.InSync:
		return fmt.Sprintf("Resyncing with the datastore; %d endpoints programmed", d.programmed.Load())
	}
	s := fmt.Sprintf("In sync: %d endpoints programmed (%d up); %s", d.programmed.Load(), d.up.Load(), known)
	if p := d.dataplaneProblems(); p != "" {
		s += "; " + p
	}
	return s + d.quarantineStatus() + d.wireguardStatus()
}

// quarantineStatus is the STATUS line's note of objects the kernel refused, if any.
func (d *Daemon) quarantineStatus() string {
	if d.quarantined == nil {
		return ""
	}
	if n := d.quarantined(); n > 0 {
		return fmt.Sprintf("; %d objects could not be programmed and fail closed (see the log and calico_host_felix_quarantined_objects)", n)
	}
	return ""
}

// wireguardPeers is what the dataplane reports of its WireGuard peers (pkg/felix/dataplane has it).
type wireguardPeers interface {
	WireguardPeers() (up, total int, on bool)
}

// wireguardStatus is the STATUS suffix naming the WireGuard peers that are up ("" when off).
func (d *Daemon) wireguardStatus() string {
	w, ok := d.dp.(wireguardPeers)
	if !ok {
		return ""
	}
	up, total, on := w.WireguardPeers()
	if !on {
		return ""
	}
	return fmt.Sprintf("; WireGuard: %d of %d peers up", up, total)
}
