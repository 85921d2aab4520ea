package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// TestEveryDatastoreParamHasATypedField: every parameter that can be set in etcd names a
// FelixConfiguration field whose type converts to the parameter's kind (a mismatch would
// silently drop that field), and local-only parameters name none.
func TestEveryDatastoreParamHasATypedField(t *testing.T) {
	st := reflect.TypeFor[api.FelixConfigurationSpec]()
	for i := range Params {
		p := &Params[i]
		field := p.V3Field()
		if p.LocalOnly {
			if field != "" {
				t.Errorf("local-only %s has FelixConfiguration field %s", p.Name, field)
			}
			continue
		}
		idx, ok := specFields[field]
		if !ok {
			t.Errorf("parameter %s: FelixConfiguration has no field %q", p.Name, field)
			continue
		}
		ft := st.Field(idx).Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if _, err := p.Convert(reflect.Zero(ft).Interface()); errors.Is(err, errWrongType) {
			t.Errorf("parameter %s: field %s of type %v: %v", p.Name, field, ft, err)
		}
	}
}

func p(s string) api.Port { v, _ := api.ParsePort(s); return v }

// TestSpecLayerNodeOverDefault: node.<host>'s set fields win over default's, field by field, and
// values arrive typed.
func TestSpecLayerNodeOverDefault(t *testing.T) {
	port := p("32768:65535")
	global := &api.FelixConfigurationSpec{
		InterfacePrefix:        "cali,tap",
		ReportingInterval:      api.Dur(30 * time.Second),
		ReportingTTL:           api.Dur(90 * time.Second),
		EndpointReportingDelay: api.Dur(250 * time.Millisecond),
		FailsafeInboundHostPorts: &[]api.ProtoPort{{Protocol: "TCP", Port: 22}, {Protocol: "UDP", Port: 68},
			{Protocol: "TCP", Port: 179, Net: "10.0.0.0/8"}, {Protocol: "tcp", Port: 22, Net: "fd00::/8"}},
		NFTablesMode:                api.Str("Enabled"),
		VXLANVNI:                    api.Int(4097),
		VXLANEnabled:                api.Bool(true),
		IPIPEnabled:                 api.Bool(false), // not ours: ignored without a problem
		IPv6Support:                 api.Bool(false),
		NftablesMarkMask:            ptr(uint32(0xff00ff00)),
		NATPortRange:                &port,
		NATOutgoingAddress:          "198.18.0.9",
		LogSeverityScreen:           "Info",
		DefaultEndpointToHostAction: "Accept",
		HealthHost:                  api.Str("  "), // blank: unset
	}
	node := &api.FelixConfigurationSpec{LogSeverityScreen: "Debug", ReportingInterval: api.Dur(0), NFTablesMode: api.Str("Auto")}
	c, problems := Resolve(SpecLayer(global, node, "h1"))
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	want := map[string]any{
		"InterfacePrefix":            []string{"cali", "tap"},
		"ReportingIntervalSecs":      time.Duration(0),
		"ReportingTTLSecs":           90 * time.Second,
		"EndpointReportingDelaySecs": 250 * time.Millisecond,
		"FailsafeInboundHostPorts": []rules.ProtoPort{{Protocol: nft.ProtoTCP, Port: 22}, {Protocol: nft.ProtoUDP, Port: 68},
			{Protocol: nft.ProtoTCP, Port: 179, Net: netip.MustParsePrefix("10.0.0.0/8")}, {Protocol: nft.ProtoTCP, Port: 22, Net: netip.MustParsePrefix("fd00::/8")}},
		"VXLANVNI":                    4097,
		"VXLANEnabled":                api.Bool(true),
		"IPv6Support":                 false,
		"NftablesMarkMask":            uint32(0xff00ff00),
		"NATPortRange":                nft.Ports(32768, 65535),
		"NATOutgoingAddress":          netip.MustParseAddr("198.18.0.9"),
		"LogSeverityScreen":           zerolog.DebugLevel,
		"DefaultEndpointToHostAction": rules.ActionAccept,
		"HealthHost":                  "localhost",
	}
	for name, w := range want {
		if d := cmp.Diff(w, c.Value(name), cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
			cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}
	if c.Sources["HealthHost"] != SourceDefault || c.Sources["VXLANVNI"] != SourceDatastore {
		t.Errorf("sources %v", c.Sources)
	}
	if len(c.NotImplemented) != 0 { // NFTablesMode Enabled and Auto, IpInIpEnabled false: as Project Calico
		t.Errorf("not implemented: %v", c.NotImplemented)
	}
}

// TestSpecLayerChecksValues: typed values are checked as text values are; a bad value is
// reported with the FelixConfiguration it came from and its field, and the next source down
// applies (node's bad value hides default's).
func TestSpecLayerChecksValues(t *testing.T) {
	cases := []struct {
		name  string
		node  api.FelixConfigurationSpec
		param string
		want  any
	}{
		{"int out of range", api.FelixConfigurationSpec{VXLANPort: api.Int(70000)}, "VXLANPort", 4789},
		{"negative duration", api.FelixConfigurationSpec{ReportingTTL: api.Dur(-time.Second)}, "ReportingTTLSecs", 90 * time.Second},
		{"named port range", api.FelixConfigurationSpec{NATPortRange: ptr(p("http"))}, "NATPortRange", nft.PortRange{}},
		{"reversed port range", api.FelixConfigurationSpec{NATPortRange: &api.Port{MinPort: 9, MaxPort: 8}}, "NATPortRange", nft.PortRange{}},
		{"failsafe protocol", api.FelixConfigurationSpec{FailsafeInboundHostPorts: &[]api.ProtoPort{{Protocol: "ICMP", Port: 1}}},
			"FailsafeInboundHostPorts", defaultPorts(t, "FailsafeInboundHostPorts")},
		{"failsafe net", api.FelixConfigurationSpec{FailsafeInboundHostPorts: &[]api.ProtoPort{{Protocol: "TCP", Port: 1, Net: "x"}}},
			"FailsafeInboundHostPorts", defaultPorts(t, "FailsafeInboundHostPorts")},
		{"mark mask too small", api.FelixConfigurationSpec{NftablesMarkMask: ptr(uint32(3))}, "NftablesMarkMask", uint32(0xffff0000)},
		{"enum", api.FelixConfigurationSpec{DefaultEndpointToHostAction: "Maybe"}, "DefaultEndpointToHostAction", rules.ActionDrop},
		{"region", api.FelixConfigurationSpec{OpenstackRegion: "Not_A_Label"}, "OpenstackRegion", ""},
	}
	global := &api.FelixConfigurationSpec{VXLANPort: api.Int(8472), ReportingTTL: api.Dur(time.Minute), DefaultEndpointToHostAction: "Return"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, problems := Resolve(SpecLayer(global, &tc.node, "h1"))
			if !reflect.DeepEqual(c.Value(tc.param), tc.want) {
				t.Errorf("%s = %v, want %v", tc.param, c.Value(tc.param), tc.want)
			}
			if len(problems) != 1 || !strings.Contains(problems[0].Error(), "FelixConfiguration node.h1") {
				t.Errorf("problems %v, want one naming FelixConfiguration node.h1", problems)
			}
		})
	}
}

// TestSpecLayerEmptyFailsafesMeanNone: an empty failsafe list in FelixConfiguration means no
// failsafe ports, as Project Calico renders it ("none"); an absent one means the defaults.
func TestSpecLayerEmptyFailsafesMeanNone(t *testing.T) {
	c, problems := Resolve(SpecLayer(&api.FelixConfigurationSpec{FailsafeOutboundHostPorts: &[]api.ProtoPort{}}, nil, "h1"))
	if len(problems) != 0 || c.FailsafeOutboundHostPorts == nil || len(c.FailsafeOutboundHostPorts) != 0 {
		t.Errorf("empty list: %v (%v), want none", c.FailsafeOutboundHostPorts, problems)
	}
	if len(c.FailsafeInboundHostPorts) != 9 {
		t.Errorf("failsafes in %v, want the 9 defaults", c.FailsafeInboundHostPorts)
	}
}

func defaultPorts(t *testing.T, name string) any {
	c, _ := Resolve()
	return c.Value(name)
}

func ptr[T any](v T) *T { return &v }

// TestCalicoctlFixtureResolves: the FelixConfigurations Project Calico's calicoctl wrote
// (test/fixtures/calicoctl-corpus.json), decoded as the syncer decodes them, resolve to typed
// parameters, node.host-a over default.
func TestCalicoctlFixtureResolves(t *testing.T) {
	raw, err := os.ReadFile("../../../test/fixtures/calicoctl-corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var entries []struct {
		Key   string          `json:"key"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(raw, &entries); err != nil {
		t.Fatal(err)
	}
	specs := map[string]*api.FelixConfigurationSpec{}
	for _, e := range entries {
		if !strings.Contains(e.Key, "/felixconfigurations/") {
			continue
		}
		v, err := datastore.Decode(e.Key, e.Value, 1)
		if err != nil {
			t.Fatalf("decoding %s: %v", e.Key, err)
		}
		fc := v.(*api.FelixConfiguration)
		api.SetDefaults(fc)
		specs[fc.Name] = &fc.Spec
	}
	c, problems := Resolve(SpecLayer(specs["default"], specs["node.host-a"], "host-a"))
	if len(problems) != 0 {
		t.Errorf("problems: %v", problems)
	}
	if c.LogSeverityScreen != zerolog.DebugLevel || c.DefaultEndpointToHostAction != rules.ActionAccept {
		t.Errorf("LogSeverityScreen %v, DefaultEndpointToHostAction %v", c.LogSeverityScreen, c.DefaultEndpointToHostAction)
	}
	for name, want := range map[string]string{"InterfacePrefix": "[cali tap]",
		"ReportingIntervalSecs": "30s", "ReportingTTLSecs": "1m30s", "VXLANVNI": "4096",
		"HealthPort": "9099", "VXLANMTU": "1410"} {
		if got := fmt.Sprint(c.Value(name)); got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
	if in, out := FormatPorts(c.FailsafeInboundHostPorts), FormatPorts(c.FailsafeOutboundHostPorts); in != "tcp:22,udp:68" || out != "tcp:2379" {
		t.Errorf("failsafes in %s out %s", in, out)
	}
}
