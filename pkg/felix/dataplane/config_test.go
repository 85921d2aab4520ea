package dataplane

import (
	"reflect"
	"testing"

	"github.com/calico-host/calico-host/pkg/felix/config"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/wireguard"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/vtepmac"
)

// felixDefaults is the dataplane configuration of felix's defaults: NewConfig of the parameter
// table's defaults, without VXLAN pools.
func felixDefaults() Config {
	c, problems := config.Resolve()
	if len(problems) > 0 {
		panic(problems)
	}
	return NewConfig(c, false)
}

// notDefaulted are the fields FelixDefaults leaves as a test gives them: values felix derives
// from the host, the cluster and the pools.
var notDefaulted = map[string]bool{"Hostname": true, "VXLANTunnelMAC": true}

// FelixDefaults fills the fields a test's configuration leaves zero with felix's defaults (the
// parameter table's, through NewConfig), so that a test names only what it is about. Booleans
// stay as the test gives them (IPv6Support is off unless a test turns it on; OpenStack and
// VXLANEnabled are derived by NewConfig and must be set by a test that wants them), and so do
// the host's name and VTEP MAC. An empty non-nil list stays empty.
func FelixDefaults(c Config) Config {
	fillZero(reflect.ValueOf(&c).Elem(), reflect.ValueOf(felixDefaults()))
	return c
}

// fillZero sets each zero field of dst (recursing into the nested configurations) to def's.
func fillZero(dst, def reflect.Value) {
	for i := range dst.NumField() {
		f, d, name := dst.Field(i), def.Field(i), dst.Type().Field(i).Name
		switch {
		case notDefaulted[name] || f.Kind() == reflect.Bool:
		case f.Type() == reflect.TypeFor[RouteConfig]() || f.Type() == reflect.TypeFor[WireguardConfig]():
			fillZero(f, d)
		case f.IsZero():
			f.Set(d)
		}
	}
}

// TestNewConfig: the dataplane takes felix's typed values as they are, with the derived ones
// (VXLAN from the pools, OpenStack, WireGuard's tables) and felix's file and table names.
func TestNewConfig(t *testing.T) {
	def := felixDefaults()
	if def.DefaultEndpointToHostAction != rules.ActionDrop || def.FilterDenyReject || def.OpenStack || def.VXLANEnabled ||
		def.VXLANVNI != 4096 || def.VXLANPort != 4789 || def.MarkMask != 0xffff0000 || len(def.FailsafeInbound) != 9 ||
		def.FailsafeInbound[0] != (rules.ProtoPort{Protocol: nft.ProtoTCP, Port: 22}) || def.MetadataPort != 8775 ||
		def.Wireguard.RoutingTable != 1 || def.Wireguard.RoutingTableV6 != 2 || def.MTUFile != DefaultMTUFile ||
		def.TableName != DefaultTable || def.Wireguard.KeyFile != wireguard.DefaultKeyFile || def.check() != nil {
		t.Errorf("unexpected defaults %+v", def)
	}
	environ := []string{"FELIX_INTERFACEPREFIX=cali,tap", "FELIX_DEFAULTENDPOINTTOHOSTACTION=return",
		"FELIX_NFTABLESFILTERDENYACTION=reject", "FELIX_ROUTETABLERANGES=5-5", "FELIX_IPFORWARDING=Disabled"}
	local := &config.Local{Env: config.EnvLayer(environ), File: config.Layer{Source: config.SourceFile}, OSHostname: "host-a"}
	c, problems := local.Resolve(nil)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	d := NewConfig(c, true)
	if d.DefaultEndpointToHostAction != rules.ActionReturn || !d.FilterDenyReject || !d.OpenStack || !d.VXLANEnabled ||
		d.Hostname != "host-a" || d.VXLANTunnelMAC != vtepmac.ForNode("host-a", false).String() ||
		d.Wireguard.RoutingTable != 5 || d.Wireguard.RoutingTableV6 != -1 || !d.IPForwardingDisabled {
		t.Errorf("unexpected configuration %+v", d)
	}
	if err := (Config{}).check(); err == nil {
		t.Error("a Config not built by NewConfig was accepted")
	}
}

// TestNewConfigIsStable: felix restarts when the dataplane's configuration changes (compared
// with reflect.DeepEqual), so two resolutions of the same parameters, whose regular expressions
// are compiled anew, must give equal configurations.
func TestNewConfigIsStable(t *testing.T) {
	environ := []string{"FELIX_INTERFACEEXCLUDE=eth9,/^docker[0-9]+$/", "FELIX_MTUIFACEPATTERN=^(bond|eth)",
		"FELIX_FAILSAFEINBOUNDHOSTPORTS=tcp:[fd5c::/16]:22"}
	resolve := func() Config {
		local := &config.Local{Env: config.EnvLayer(environ), File: config.Layer{Source: config.SourceFile}, OSHostname: "host-a"}
		c, problems := local.Resolve(nil)
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		return NewConfig(c, false)
	}
	if a, b := resolve(), resolve(); !reflect.DeepEqual(a, b) || len(a.InterfaceExclude) != 2 {
		t.Errorf("two resolutions differ:\n%+v\n%+v", a, b)
	}
}
