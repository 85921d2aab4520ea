package dataplane

import (
	"context"

	"github.com/calico-host/calico-host/pkg/felix/dataplane/vxlan"
	"github.com/calico-host/calico-host/pkg/ipip"
	"github.com/calico-host/calico-host/pkg/nft"
)

// encapsOn says which encapsulations of tunnel devices are on (WireGuard comes from Config).
type encapsOn struct{ ipip, vxlanV4, vxlanV6 bool }

// configEncaps is what the configuration alone says: before the IP pools are known, IPIP is
// on only when IpInIpEnabled forces it.
func configEncaps(cfg Config) encapsOn {
	return encapsOn{ipip: cfg.IPIPEnabled != nil && *cfg.IPIPEnabled, vxlanV4: cfg.VXLANEnabled, vxlanV6: cfg.VXLANEnabled && cfg.IPv6Support}
}

// modelEncaps is what the configuration and the IP pools say, as the tunnel devices are made.
func modelEncaps(cfg Config, m *model) encapsOn {
	return encapsOn{ipip: ipipWanted(cfg, m), vxlanV4: vxlanWanted(cfg, m, nft.IPv4),
		vxlanV6: cfg.IPv6Support && vxlanWanted(cfg, m, nft.IPv6)}
}

// workloadMTU is the MTU workloads should use, as Project Calico's felix computes it
// (determinePodMTU): the smallest MTU among the enabled encapsulations (IPIP, VXLAN, VXLAN over
// IPv6, WireGuard, WireGuard over IPv6), each its configured MTU or else the host MTU less its
// overhead (20, 50, 70, 60, 80); the host MTU when none is enabled.
func workloadMTU(cfg Config, on encapsOn, hostMTU int) int {
	type encap struct {
		on            bool
		mtu, overhead int
	}
	encaps := []encap{
		{on.ipip, cfg.IPIPMTU, ipip.Overhead},
		{on.vxlanV4, cfg.VXLANMTU, vxlan.OverheadV4},
		{on.vxlanV6, cfg.VXLANMTUV6, vxlan.OverheadV6},
	}
	for _, f := range cfg.wgFamilies() {
		encaps = append(encaps, encap{f.enabled, f.mtu, f.overhead})
	}
	mtu := 0
	for _, e := range encaps {
		m := e.mtu
		if m == 0 {
			m = hostMTU - e.overhead
		}
		if e.on && m > 0 && (mtu == 0 || m < mtu) {
			mtu = m
		}
	}
	if mtu == 0 {
		return hostMTU
	}
	return mtu
}

// readHostMTU reads the host MTU for the workload MTU (the fallback when it cannot).
func (d *Dataplane) readHostMTU(hostMTU func(context.Context) (int, error)) int {
	ctx, cancel := context.WithTimeout(context.Background(), mtuTimeout)
	defer cancel()
	mtu, err := hostMTU(ctx)
	if err != nil {
		d.log.Warn().Err(err).Int("mtu", mtu).Msg("Could not read the host MTU; using the fallback")
	}
	return mtu
}

// writeWorkloadMTU records the MTU workloads should use (workloadMTU) in cfg.MTUFile, where the
// CNI plugin reads it when its network config sets no mtu, when it differs from what was
// written. A failure is logged (and returned) and retried on the next call.
func (d *Dataplane) writeWorkloadMTU(on encapsOn) error {
	mtu := workloadMTU(d.cfg, on, d.hostMTU)
	if mtu == d.writtenMTU {
		return nil
	}
	if err := vxlan.WriteMTUFile(d.cfg.MTUFile, mtu); err != nil {
		d.log.Warn().Err(err).Str("file", d.cfg.MTUFile).Msg("Could not write the workload MTU file")
		d.writtenMTU = 0
		return err
	}
	d.writtenMTU = mtu
	d.log.Info().Int("mtu", mtu).Int("host_mtu", d.hostMTU).Bool("ipip", on.ipip).Bool("vxlan", on.vxlanV4).
		Bool("vxlan_v6", on.vxlanV6).Str("file", d.cfg.MTUFile).Msg("Wrote the workload MTU")
	return nil
}

// updateWorkloadMTU rewrites the workload MTU file once calc is in sync, when the IP pools
// turned an encapsulation on or off (only when the dataplane found the host MTU itself).
func (d *Dataplane) updateWorkloadMTU() {
	if d.hostMTU > 0 && d.model.inSync {
		_ = d.writeWorkloadMTU(modelEncaps(d.cfg, d.model)) // logged; retried on the next apply
	}
}
