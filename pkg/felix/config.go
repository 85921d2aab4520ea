package felix

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

// checkConfig applies live configuration changes and returns a restart error for the others:
// a restart parameter changed, the datastore is no longer ready, or the dataplane's
// configuration (including the pool-derived encapsulation) differs from the one it runs with.
func (d *Daemon) checkConfig(f calc.Facts) error {
	next := d.cfg
	if f.Config != d.dsCfg {
		d.logScoped(d.dsCfg, f.Config)
		d.dsCfg = f.Config
		if !f.Config.DatastoreReady {
			return d.restart("ClusterInformation default no longer has datastoreReady: true")
		}
		next = d.resolve(datastoreConfig(f.Config))
		restart, live := d.cfg.Changed(next)
		if len(restart) > 0 {
			return d.restart("changed: " + strings.Join(restart, ", "))
		}
		if len(live) > 0 {
			d.log.Info().Strs("params", live).Msg("Applying configuration change")
		}
	}
	if dp := dataplane.NewConfig(next, f.PoolsUseVXLAN); !reflect.DeepEqual(dp, d.dpCfg) {
		return d.restart(fmt.Sprintf("dataplane configuration changed (VXLAN %t -> %t, OpenStack %t -> %t)",
			d.dpCfg.VXLANEnabled, dp.VXLANEnabled, d.dpCfg.OpenStack, dp.OpenStack))
	}
	if next != d.cfg {
		d.cfg = next
		d.applyLive()
	}
	d.checkClusterRoutes(f)
	return nil
}

// logScoped logs which selector-scoped FelixConfiguration applies to this host when that
// changes, and warns when several match (the oldest wins, as in Project Calico).
func (d *Daemon) logScoped(prev, next calc.DatastoreConfig) {
	if prev.ScopedName == next.ScopedName && prev.ScopedMatches == next.ScopedMatches && prev.Scoped != nil {
		return
	}
	switch {
	case next.ScopedMatches > 1:
		d.log.Warn().Str("winner", next.ScopedName).Int("matching", next.ScopedMatches).
			Msg("Several selector-scoped FelixConfigurations match this node; using the oldest by creation time")
	case next.Scoped != nil:
		d.log.Info().Str("name", next.ScopedName).Msg("Selector-scoped FelixConfiguration matches this node")
	case prev.Scoped != nil:
		d.log.Info().Str("previous", prev.ScopedName).Msg("No selector-scoped FelixConfiguration matches this node any more")
	}
}

// applyLive applies the parameters that change without a restart.
func (d *Daemon) applyLive() {
	d.applyLogLevel()
	d.agent.SetIntervals(d.cfg.ReportingInterval, d.cfg.ReportingTTL)
	if d.endpoints != nil {
		d.endpoints.SetDelay(d.cfg.EndpointReportingDelay)
	}
}
