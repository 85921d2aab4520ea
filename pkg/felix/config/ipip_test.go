package config

import (
	"net/netip"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
)

// TestIPIPParams: IpInIpEnabled, IpInIpMtu (FelixConfiguration ipipEnabled, ipipMTU) and
// IpInIpTunnelAddr (local only, as Project Calico derives it from the Node) are applied, are not
// reported as not implemented, and keep Project Calico's defaults when unset.
func TestIPIPParams(t *testing.T) {
	def, problems := Resolve()
	if len(problems) != 0 || def.IPIPEnabled != nil || def.IPIPMTU != 0 || def.IPIPTunnelAddr.IsValid() {
		t.Fatalf("defaults: %v %v %d %v", problems, def.IPIPEnabled, def.IPIPMTU, def.IPIPTunnelAddr)
	}
	off, mtu := false, 1400
	ds := SpecLayer(&api.FelixConfigurationSpec{IPIPEnabled: &off, IPIPMTU: &mtu}, nil, "h1")
	env := EnvLayer([]string{"FELIX_IPINIPTUNNELADDR=10.65.0.7"})
	c, problems := Resolve(ds, env)
	if len(problems) != 0 || len(c.NotImplemented) != 0 {
		t.Fatalf("problems %v, not implemented %v", problems, c.NotImplemented)
	}
	if c.IPIPEnabled == nil || *c.IPIPEnabled || c.IPIPMTU != 1400 || c.IPIPTunnelAddr != netip.MustParseAddr("10.65.0.7") {
		t.Errorf("config: %v %d %v", c.IPIPEnabled, c.IPIPMTU, c.IPIPTunnelAddr)
	}
	if c, _ := Resolve(EnvLayer([]string{"FELIX_IPINIPMTU=70000"})); c.IPIPMTU != 0 {
		t.Errorf("out-of-range IpInIpMtu taken: %d", c.IPIPMTU)
	}
}

// TestIPForwardingParam: IPForwarding (default Enabled); Disabled (which turns the dataplane's
// forwarding sysctls off) is not reported as not implemented.
func TestIPForwardingParam(t *testing.T) {
	def, _ := Resolve()
	if def.IPForwardingDisabled {
		t.Errorf("default IPForwarding Disabled")
	}
	c, problems := Resolve(SpecLayer(&api.FelixConfigurationSpec{IPForwarding: "Disabled"}, nil, "h1"))
	if len(problems) != 0 || len(c.NotImplemented) != 0 || !c.IPForwardingDisabled {
		t.Errorf("IPForwarding Disabled: %v %v %v", problems, c.NotImplemented, c.IPForwardingDisabled)
	}
}

// TestMTUIfacePatternParam: Project Calico's default pattern, a valid pattern from the
// environment is compiled, an invalid one is a problem and the default stays.
func TestMTUIfacePatternParam(t *testing.T) {
	def, _ := Resolve()
	if def.MTUIfacePattern.String() != `^((en|wl|ww|sl|ib)[Pcopsvx].*|(eth|wlan|wwan).*)` || !def.MTUIfacePattern.MatchString("enp0s3") {
		t.Errorf("default MTUIfacePattern %v", def.MTUIfacePattern)
	}
	c, problems := Resolve(EnvLayer([]string{"FELIX_MTUIFACEPATTERN=^bond"}))
	if len(problems) != 0 || len(c.NotImplemented) != 0 || !c.MTUIfacePattern.MatchString("bond0") || c.MTUIfacePattern.MatchString("eth0") {
		t.Errorf("MTUIfacePattern ^bond: %v %v %v", problems, c.NotImplemented, c.MTUIfacePattern)
	}
	c, problems = Resolve(EnvLayer([]string{"FELIX_MTUIFACEPATTERN=("}))
	if len(problems) == 0 || c.MTUIfacePattern.String() != def.MTUIfacePattern.String() {
		t.Errorf("invalid MTUIfacePattern: problems %v, value %v", problems, c.MTUIfacePattern)
	}
}
