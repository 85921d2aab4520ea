package startup

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/ipip"
	"github.com/calico-host/calico-host/pkg/nlhandle"
)

// ipipDeviceState is what calico-startup found about tunl0, the device calico-felix routes IPIP
// pools through (the gauge calico_startup_ipip_device_state).
type ipipDeviceState string

const (
	ipipOff       ipipDeviceState = "off"            // no IPv4 pool uses IPIP: not checked
	ipipAvailable ipipDeviceState = "available"      // tunl0 exists, or the kernel created it
	ipipNoDriver  ipipDeviceState = "no ipip driver" // the kernel cannot create tunl0
	ipipFailed    ipipDeviceState = "failed"         // the check itself failed (see the log)
)

var ipipDeviceStates = []ipipDeviceState{ipipOff, ipipAvailable, ipipNoDriver, ipipFailed}

// probeIPIP is calico-felix's own request for tunl0 (package ipip's Handle): the device is there
// as an ipip link, or creating it succeeds. A kernel with the ipip module would create tunl0 on
// its own when the module loads, and calico-felix creates it when an IPIP pool exists, so
// creating it here changes nothing felix would not. ipip.ErrNoDriver: the kernel has no ipip
// driver.
func probeIPIP(h ipip.Handle) error {
	_, _, err := ipip.EnsureLink(h, 0) // 0: the kernel's default MTU; felix sets its own
	return err
}

// IPIPDevice implements Kernel with a netlink handle of its own in the kernel's namespace.
func (k *netlinkKernel) IPIPDevice() error {
	h, err := nlhandle.OpenAt(k.ns)
	if err != nil {
		return fmt.Errorf("opening netlink: %w", err)
	}
	defer h.Close()
	return probeIPIP(ipip.NewNetlink(h))
}

// ipipPoolNames are the IPv4 pools with ipipMode Always or CrossSubnet, by name: the pools for
// which calico-felix wants tunl0.
func ipipPoolNames(pools []*api.IPPool) []string {
	var out []string
	for _, p := range pools {
		if c, err := netip.ParsePrefix(p.Spec.CIDR); err == nil && c.Addr().Unmap().Is4() && ipipPool(&p.Spec) {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

// checkIPIP checks tunl0 when an IPv4 pool uses IPIP and reports the result: the gauge, a
// warning on systemd's STATUS while tunl0 cannot exist, and a log line naming the pools when
// the state or the pools change. Once tunl0 was found for the same pools it is not asked for
// again (calico-felix keeps it): only a missing driver or a failure is checked on each reconcile.
func (s *Startup) checkIPIP(pools []*api.IPPool) {
	names := ipipPoolNames(pools)
	st, err := ipipOff, error(nil)
	if len(names) > 0 && s.ipipLogged == string(ipipAvailable)+" "+strings.Join(names, ",") {
		st = ipipAvailable
	} else if len(names) > 0 {
		st, err = ipipAvailable, s.kernel.IPIPDevice()
		switch {
		case errors.Is(err, ipip.ErrNoDriver):
			st = ipipNoDriver
		case err != nil:
			st = ipipFailed
		}
	}
	s.metrics.setIPIPState(st)
	warning := ""
	if st == ipipNoDriver || st == ipipFailed {
		warning = fmt.Sprintf("IPIP pool %s: tunl0 is not available (%s): calico-felix cannot route the pool", strings.Join(names, ", "), st)
	}
	s.line.warn(warning)
	key := string(st) + " " + strings.Join(names, ",")
	if key == s.ipipLogged {
		return
	}
	s.ipipLogged = key
	s.logIPIP(st, names, err)
}

func (s *Startup) logIPIP(st ipipDeviceState, names []string, err error) {
	l := s.log.With().Strs("pools", names).Str("device", ipip.DeviceName).Str("state", string(st)).Logger()
	switch st {
	case ipipNoDriver:
		l.Error().Err(err).Msg("IPIP pools need the IPIP tunnel device, but the kernel has no ipip driver: calico-felix cannot program their routes (load the ipip module, or use VXLAN pools)")
	case ipipFailed:
		l.Warn().Err(err).Msg("Checking the IPIP tunnel device for IPIP pools failed")
	case ipipAvailable:
		l.Info().Msg("The IPIP tunnel device is available for IPIP pools")
	}
}
