package config

import (
	"crypto/tls"
	"fmt"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/compat"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

func env(kv ...string) Layer { return EnvLayer(kv) }

func file(kv ...string) Layer {
	l := Layer{Source: SourceFile, Origin: "/etc/calico/felix.toml", Values: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		l.Values[kv[i]] = kv[i+1]
	}
	return l
}

func ds(kv ...string) Layer {
	l := file(kv...)
	l.Source, l.Origin = SourceDatastore, "FelixConfiguration"
	return l
}

func TestPrecedence(t *testing.T) {
	cases := []struct {
		name       string
		layers     []Layer
		param      string
		want       any
		wantSource Source
		problems   int
	}{
		{"default", nil, "InterfacePrefix", []string{"cali"}, SourceDefault, 0},
		{"datastore over default", []Layer{ds("InterfacePrefix", "cali,tap")}, "InterfacePrefix", []string{"cali", "tap"}, SourceDatastore, 0},
		{"file over datastore", []Layer{ds("InterfacePrefix", "tap"), file("InterfacePrefix", "cali,tap")},
			"InterfacePrefix", []string{"cali", "tap"}, SourceFile, 0},
		{"env over file", []Layer{env("FELIX_INTERFACEPREFIX=veth"), ds("InterfacePrefix", "tap"), file("InterfacePrefix", "cali,tap")},
			"InterfacePrefix", []string{"veth"}, SourceEnv, 0},
		{"env prefix and name case-insensitive", []Layer{env("felix_LogSeverityScreen=debug")}, "LogSeverityScreen", zerolog.DebugLevel, SourceEnv, 0},
		{"file key case-insensitive", []Layer{file("logseverityscreen", "WARNING")}, "LogSeverityScreen", zerolog.WarnLevel, SourceFile, 0},
		{"invalid env falls to file", []Layer{env("FELIX_HEALTHPORT=http"), file("HealthPort", "9199")}, "HealthPort", 9199, SourceFile, 1},
		{"invalid file falls to datastore", []Layer{file("HealthPort", "70000"), ds("HealthPort", "9299")}, "HealthPort", 9299, SourceDatastore, 1},
		{"invalid everywhere gives default", []Layer{env("FELIX_REPORTINGINTERVALSECS=soon"), file("ReportingIntervalSecs", "-3"),
			ds("ReportingIntervalSecs", "x")}, "ReportingIntervalSecs", 30 * time.Second, SourceDefault, 3},
		{"local-only ignored from datastore", []Layer{ds("FelixHostname", "other")}, "FelixHostname", "", SourceDefault, 1},
		{"local-only etcd endpoints from datastore ignored", []Layer{ds("EtcdEndpoints", "http://evil:2379")}, "EtcdEndpoints", []string(nil), SourceDefault, 1},
		{"local-only from env", []Layer{env("FELIX_FELIXHOSTNAME=host-b")}, "FelixHostname", "host-b", SourceEnv, 0},
		{"unknown names reported", []Layer{env("FELIX_NOSUCHTHING=1"), ds("Bogus", "x")}, "InterfacePrefix", []string{"cali"}, SourceDefault, 2},
		{"compat names accepted silently", []Layer{ds("LogFilePath", "none", "IptablesRefreshInterval", "10")}, "LogPrefix", "calico-packet", SourceDefault, 0},
		{"empty value means unset", []Layer{env("FELIX_LOGPREFIX="), file("LogPrefix", "x")}, "LogPrefix", "x", SourceFile, 0},
		{"none empties a list", []Layer{env("FELIX_FAILSAFEINBOUNDHOSTPORTS=none")}, "FailsafeInboundHostPorts", []rules.ProtoPort{}, SourceEnv, 0},
		{"duration with unit", []Layer{file("ReportingIntervalSecs", "1m")}, "ReportingIntervalSecs", time.Minute, SourceFile, 0},
		{"duration plain seconds", []Layer{ds("ReportingTTLSecs", "45")}, "ReportingTTLSecs", 45 * time.Second, SourceDatastore, 0},
		{"duration fractional seconds", []Layer{ds("EndpointReportingDelaySecs", "0.25")}, "EndpointReportingDelaySecs", 250 * time.Millisecond, SourceDatastore, 0},
		{"hex mark mask", []Layer{ds("NftablesMarkMask", "0xff00ff00")}, "NftablesMarkMask", uint32(0xff00ff00), SourceDatastore, 0},
		{"mark mask too small", []Layer{ds("NftablesMarkMask", "0x3")}, "NftablesMarkMask", uint32(0xffff0000), SourceDefault, 1},
		{"bool spellings", []Layer{env("FELIX_HEALTHENABLED=yes")}, "HealthEnabled", true, SourceEnv, 0},
		{"optional bool unset", nil, "VXLANEnabled", (*bool)(nil), SourceDefault, 0},
		{"one-of case-insensitive", []Layer{ds("DefaultEndpointToHostAction", "Return")}, "DefaultEndpointToHostAction", rules.ActionReturn, SourceDatastore, 0},
		{"one-of default", nil, "DefaultEndpointToHostAction", rules.ActionDrop, SourceDefault, 0},
		{"deny action", []Layer{ds("NftablesFilterDenyAction", "reject")}, "NftablesFilterDenyAction", true, SourceDatastore, 0},
		{"service loop prevention", []Layer{ds("ServiceLoopPrevention", "Disabled")}, "ServiceLoopPrevention", rules.LoopDisabled, SourceDatastore, 0},
		{"NAT exclusions", []Layer{ds("NATOutgoingExclusions", "IPPoolsAndHostIPs")}, "NATOutgoingExclusions", true, SourceDatastore, 0},
		{"IP forwarding", []Layer{ds("IPForwarding", "Disabled")}, "IPForwarding", true, SourceDatastore, 0},
		{"route source", []Layer{ds("RouteSource", "workloadips")}, "RouteSource", calc.RouteSourceWorkloadIPs, SourceDatastore, 0},
		{"cluster routes default", nil, "ProgramClusterRoutes", calc.ClusterRoutesIPIP, SourceDefault, 0},
		{"cluster routes", []Layer{ds("ProgramClusterRoutes", "Enabled")}, "ProgramClusterRoutes", calc.ClusterRoutesIPIP | calc.ClusterRoutesNoEncap, SourceDatastore, 0},
		{"cluster routes disabled", []Layer{env("FELIX_PROGRAMCLUSTERROUTES=Disabled")}, "ProgramClusterRoutes", calc.ClusterRoutes(0), SourceEnv, 0},
		{"cluster routes no-encap", []Layer{file("ProgramClusterRoutes", "EnabledNoEncapOnly")}, "ProgramClusterRoutes", calc.ClusterRoutesNoEncap, SourceFile, 0},
		{"cluster routes invalid", []Layer{ds("ProgramClusterRoutes", "BIRD")}, "ProgramClusterRoutes", calc.ClusterRoutesIPIP, SourceDefault, 1},
		{"client auth", []Layer{ds("PrometheusMetricsClientAuth", "RequireAnyClientCert")}, "PrometheusMetricsClientAuth", tls.RequireAnyClientCert, SourceDatastore, 0},
		{"workload source spoofing", []Layer{ds("WorkloadSourceSpoofing", "any")}, "WorkloadSourceSpoofing", true, SourceDatastore, 0},
		{"floating IPs invalid value", []Layer{ds("FloatingIPs", "Sometimes")}, "FloatingIPs", false, SourceDefault, 1},
		{"one-of invalid", []Layer{ds("DefaultEndpointToHostAction", "Maybe")}, "DefaultEndpointToHostAction", rules.ActionDrop, SourceDefault, 1},
		{"region checked", []Layer{ds("OpenstackRegion", "Not_A_Label")}, "OpenstackRegion", "", SourceDefault, 1},
		{"address", []Layer{ds("NATOutgoingAddress", "198.18.0.1")}, "NATOutgoingAddress", netip.MustParseAddr("198.18.0.1"), SourceDatastore, 0},
		{"port range", []Layer{ds("NATPortRange", "32768:65000")}, "NATPortRange", nft.Ports(32768, 65000), SourceDatastore, 0},
		{"bad port range", []Layer{ds("NATPortRange", "9:8")}, "NATPortRange", nft.PortRange{}, SourceDefault, 1},
		{"interface exclusions", []Layer{ds("InterfaceExclude", "eth0,/^docker/")}, "InterfaceExclude", "[^eth0$ ^docker]", SourceDatastore, 0},
		{"bad interface exclusion refuses the list", []Layer{ds("InterfaceExclude", "eth0,/(/")}, "InterfaceExclude", "[^kube-ipvs0$]", SourceDefault, 1},
		{"bad interface name refuses the list", []Layer{ds("InterfaceExclude", "eth0,a/b")}, "InterfaceExclude", "[^kube-ipvs0$]", SourceDefault, 1},
		{"regular expression", []Layer{ds("MTUIfacePattern", "^bond")}, "MTUIfacePattern", "^bond", SourceDatastore, 0},
		{"bad regular expression", []Layer{ds("MTUIfacePattern", "(")}, "MTUIfacePattern", `^((en|wl|ww|sl|ib)[Pcopsvx].*|(eth|wlan|wwan).*)`, SourceDefault, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, problems := Resolve(tc.layers...)
			got := c.Value(tc.param)
			switch got.(type) {
			case *regexp.Regexp, []*regexp.Regexp: // compared by their text
				got = fmt.Sprint(got)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.param, diff)
			}
			p, _ := Lookup(tc.param)
			if got := c.Sources[p.Name]; got != tc.wantSource {
				t.Errorf("source of %s = %v, want %v", tc.param, got, tc.wantSource)
			}
			if len(problems) != tc.problems {
				t.Errorf("problems = %v, want %d", problems, tc.problems)
			}
		})
	}
}

func TestProblemNamesSourceAndKey(t *testing.T) {
	_, problems := Resolve(env("FELIX_HEALTHPORT=http"))
	if len(problems) != 1 {
		t.Fatalf("problems = %v", problems)
	}
	msg := problems[0].Error()
	for _, want := range []string{"HealthPort", `"http"`, "environment", "FELIX_HEALTHPORT"} {
		if !strings.Contains(msg, want) {
			t.Errorf("problem %q does not mention %q", msg, want)
		}
	}
}

func TestEveryParamHasATypedField(t *testing.T) {
	want := map[Kind]reflect.Type{
		KindBool: reflect.TypeFor[bool](), KindOptBool: reflect.TypeFor[*bool](), KindInt: reflect.TypeFor[int](),
		KindUint32: reflect.TypeFor[uint32](), KindString: reflect.TypeFor[string](),
		KindSeconds: reflect.TypeFor[time.Duration](), KindList: reflect.TypeFor[[]string](),
		KindPorts: reflect.TypeFor[[]rules.ProtoPort](), KindAddr: reflect.TypeFor[netip.Addr](),
		KindPortRange: reflect.TypeFor[nft.PortRange](), KindTableRanges: reflect.TypeFor[[]TableRange](),
		KindRegexp: reflect.TypeFor[*regexp.Regexp](), KindIfaceRegexps: reflect.TypeFor[[]*regexp.Regexp](),
	}
	ct := reflect.TypeFor[Config]()
	seen := map[string]bool{}
	for _, p := range Params {
		f, ok := ct.FieldByName(p.FieldName())
		if !ok {
			t.Errorf("parameter %s has no Config field", p.Name)
			continue
		}
		wantType := want[p.Kind]
		if p.Kind == KindOneOf {
			wantType = choicesType(t, p)
		}
		if f.Type != wantType {
			t.Errorf("field %s is %v, kind %v wants %v", p.Name, f.Type, p.Kind, wantType)
		}
		if seen[lower(p.Name)] {
			t.Errorf("parameter %s listed twice", p.Name)
		}
		seen[lower(p.Name)] = true
		if p.Default != "" {
			if _, err := p.Parse(p.Default); err != nil {
				t.Errorf("default of %s: %v", p.Name, err)
			}
		}
	}
}

// choicesType is the one Go type of a KindOneOf parameter's choices.
func choicesType(t *testing.T, p Param) reflect.Type {
	t.Helper()
	if len(p.Choices) == 0 {
		t.Errorf("%s has no choices", p.Name)
		return nil
	}
	typ := reflect.TypeOf(p.Choices[0].Value)
	for _, c := range p.Choices {
		if reflect.TypeOf(c.Value) != typ {
			t.Errorf("%s: choice %s is a %T, not a %v", p.Name, c.Name, c.Value, typ)
		}
	}
	return typ
}

func TestParsePorts(t *testing.T) {
	cases := []struct {
		in   string
		want []rules.ProtoPort
		err  bool
	}{
		{"22", []rules.ProtoPort{{Protocol: nft.ProtoTCP, Port: 22}}, false},
		{"udp:68, tcp:179", []rules.ProtoPort{{Protocol: nft.ProtoUDP, Port: 68}, {Protocol: nft.ProtoTCP, Port: 179}}, false},
		{"TCP:198.18.0.0/15:22", []rules.ProtoPort{{Protocol: nft.ProtoTCP, Net: netip.MustParsePrefix("198.18.0.0/15"), Port: 22}}, false},
		{"udp:[fd5c::/16]:53", []rules.ProtoPort{{Protocol: nft.ProtoUDP, Net: netip.MustParsePrefix("fd5c::/16"), Port: 53}}, false},
		{"sctp:198.18.0.1:9", []rules.ProtoPort{{Protocol: nft.ProtoSCTP, Net: netip.MustParsePrefix("198.18.0.1/32"), Port: 9}}, false},
		{"none", []rules.ProtoPort{}, false},
		{"icmp:22", nil, true},
		{"tcp:0", nil, true},
		{"tcp:70000", nil, true},
		{"22:tcp", nil, true},
		{"tcp:not-a-net:22", nil, true},
	}
	for _, tc := range cases {
		got, err := ParsePorts(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("ParsePorts(%q) error = %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if !tc.err && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParsePorts(%q) = %v, want %v", tc.in, got, tc.want)
		}
		if !tc.err {
			again, err := ParsePorts(FormatPorts(got))
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("FormatPorts round trip of %q: %q -> %v, %v", tc.in, FormatPorts(got), again, err)
			}
		}
	}
}

func TestChangedSplitsRestartAndLive(t *testing.T) {
	base, _ := Resolve(ds("LogSeverityScreen", "Info", "InterfacePrefix", "cali"))
	cases := []struct {
		name          string
		layer         Layer
		restart, live []string
	}{
		{"nothing", ds("LogSeverityScreen", "Info", "InterfacePrefix", "cali"), nil, nil},
		{"log level is live", ds("LogSeverityScreen", "Debug"), nil, []string{"LogSeverityScreen"}},
		{"reporting is live", ds("ReportingIntervalSecs", "5", "ReportingTTLSecs", "15", "EndpointReportingDelaySecs", "2"),
			nil, []string{"ReportingIntervalSecs", "ReportingTTLSecs", "EndpointReportingDelaySecs"}},
		{"interface prefix needs restart", ds("InterfacePrefix", "cali,tap"), []string{"InterfacePrefix"}, nil},
		{"both", ds("InterfacePrefix", "tap", "LogSeverityScreen", "Error", "EndpointReportingEnabled", "true"),
			[]string{"EndpointReportingEnabled", "InterfacePrefix"}, []string{"LogSeverityScreen"}},
		{"same value spelled differently", ds("InterfacePrefix", " cali ", "LogSeverityScreen", "INFO"), nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, _ := Resolve(tc.layer)
			restart, live := base.Changed(next)
			slices.Sort(restart)
			slices.Sort(live)
			slices.Sort(tc.restart)
			slices.Sort(tc.live)
			if !slices.Equal(restart, tc.restart) || !slices.Equal(live, tc.live) {
				t.Errorf("Changed = restart %v live %v, want restart %v live %v", restart, live, tc.restart, tc.live)
			}
		})
	}
}

// TestEveryFelixConfigurationFieldIsCovered: every FelixConfiguration field is a parameter of the
// table (applied) or on compat's list (reported when set to what calico-host does not
// implement), never both, and no list parameter is reported as unknown from any source.
func TestEveryFelixConfigurationFieldIsCovered(t *testing.T) {
	covered := map[string]string{}
	for i := range Params {
		if f := Params[i].V3Field(); f != "" {
			covered[f] = Params[i].Name
		}
		if IsCompat(Params[i].Name) {
			t.Errorf("%s is in the parameter table and on compat's list", Params[i].Name)
		}
	}
	raw := map[string]string{}
	for _, s := range compat.Settings(compat.Felix) {
		raw[s.Name] = "x"
		if s.Field != "" {
			covered[s.Field] = s.Name
		}
	}
	for _, s := range compat.Settings(compat.FelixConfiguration) {
		covered[strings.TrimPrefix(s.Name, "spec.")] = s.Name
	}
	// nodeSelector is not a parameter: it says where a selector-scoped FelixConfiguration
	// applies (calc picks the one that does).
	covered["nodeSelector"] = "scoping"
	for field := range specFields {
		if covered[field] == "" {
			t.Errorf("FelixConfiguration field %s is neither a parameter nor on compat's list", field)
		}
	}
	for _, l := range []Layer{env(), file(), ds()} {
		l.Values = raw
		if _, problems := Resolve(l); len(problems) != 0 {
			t.Errorf("%s: %v", l.Origin, problems)
		}
	}
	c, problems := Resolve(ds("MetadataAddr", "None", "Ipv6Support", "false"))
	if len(problems) != 0 || c.OpenStack() || c.IPv6Support {
		t.Errorf("MetadataAddr None must not turn on OpenStack; Ipv6Support must map to IPv6Support (%v)", problems)
	}
}

// TestNotImplementedFollowsPrecedence: a parameter calico-host does not implement is reported
// once, from the highest source that sets it, and not at all when that value is Project Calico's
// default (or another value calico-host implements), whatever the lower sources say. Project
// Calico's spellings (FELIX_NETLINKTIMEOUTSECS, WireguardPersistentKeepAlive) are accepted.
func TestNotImplementedFollowsPrecedence(t *testing.T) {
	global := &api.FelixConfigurationSpec{NetlinkTimeout: api.Dur(20 * time.Second), BPFEnabled: api.Bool(true),
		IptablesBackend: api.Str("Legacy"), WireguardPersistentKeepAlive: api.Dur(25 * time.Second)}
	node := &api.FelixConfigurationSpec{BPFEnabled: api.Bool(false)}
	f := file("IptablesLockProbeIntervalMillis", "50", "UsageReportingIntervalSecs", "3600", "wireguardpersistentkeepalive", "0")
	e := env("FELIX_NETLINKTIMEOUTSECS=10", "FELIX_IPTABLESPOSTWRITECHECKINTERVALSECS=6", "felix_UsageReportingInitialDelaySecs=1")
	c, problems := Resolve(e, f, SpecLayer(global, node, "h1"))
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	got := map[string]string{}
	for _, fd := range c.NotImplemented {
		if _, dup := got[fd.Setting.Name]; dup {
			t.Errorf("%s reported twice", fd.Setting.Name)
		}
		got[fd.Setting.Name] = fd.Object + " " + fd.Field + "=" + fd.Value
	}
	want := map[string]string{
		"IptablesPostWriteCheckIntervalSecs": "environment FELIX_IPTABLESPOSTWRITECHECKINTERVALSECS=6",
		"UsageReportingInitialDelaySecs":     "environment felix_UsageReportingInitialDelaySecs=1",
		"UsageReportingIntervalSecs":         "/etc/calico/felix.toml UsageReportingIntervalSecs=3600",
		"IptablesBackend":                    "FelixConfiguration default spec.iptablesBackend=Legacy",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("not implemented (-want +got):\n%s", d)
	}
}
