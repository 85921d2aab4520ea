package compat

import (
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestListParses(t *testing.T) {
	total := 0
	for _, k := range Kinds {
		for _, s := range Settings(k) {
			total++
			if !s.Implemented("") {
				t.Errorf("%s %s: unset must never warn", k, s.Name)
			}
			if len(s.OK) > 0 && !s.Implemented(s.OK[0]) {
				t.Errorf("%s %s: its default %q warns", k, s.Name, s.OK[0])
			}
		}
	}
	if total < 150 {
		t.Fatalf("only %d settings on the list", total)
	}
	if _, err := parseList("felix = [ { param = \"X\", type = \"bool\", ok = [\"maybe\"], why = \"r\" } ]\n[reasons]\nr = \"x\"\n"); err == nil {
		t.Error("a default that does not parse as its type was accepted")
	}
	if _, err := parseList("felix = [ { param = \"X\", type = \"bool\", ok = [], why = \"nope\" } ]\n[reasons]\nr = \"x\"\n"); err == nil {
		t.Error("an unknown reason was accepted")
	}
}

func TestImplementedComparesByType(t *testing.T) {
	for _, tc := range []struct {
		typ   Type
		ok    []string
		value string
		want  bool
	}{
		{TypeBool, []string{"false"}, "0", true},
		{TypeBool, []string{"false"}, "True", false},
		{TypeBool, []string{"false"}, "maybe", false},
		{TypeInt, []string{"0xffff0000"}, "4294901760", true},
		{TypeInt, []string{"5"}, "6", false},
		{TypeSeconds, []string{"5"}, "5s", true},
		{TypeSeconds, []string{"5"}, "5.0", true},
		{TypeSeconds, []string{"5"}, "5000ms", true},
		{TypeSeconds, []string{"5"}, "6", false},
		{TypeMillis, []string{"50"}, "50ms", true},
		{TypeMillis, []string{"50"}, "50", true},
		{TypeMillis, []string{"50"}, "0.05", false},
		{TypeEnum, []string{"Auto", "Enabled"}, "enabled", true},
		{TypeEnum, []string{"Auto", "Enabled"}, "Disabled", false},
		{TypeString, []string{"/var/log/calico/felix.log"}, " /var/log/calico/felix.log ", true},
		{TypeString, nil, "x", false},
		{TypeList, []string{"30000:32767"}, " 30000:32767 ,", true},
		{TypeList, []string{"30000:32767"}, "30000:32767,1:2", false},
		{TypeKV, []string{"TCPSynSent=20s,UDPTimeout=60s"}, "tcpsynsent=20s", true},
		{TypeKV, []string{"TCPSynSent=20s,UDPTimeout=60s"}, "TCPSynSent=21s", false},
		{TypeKV, nil, "a=b", false},
	} {
		s := &Setting{Type: tc.typ, OK: tc.ok}
		if got := s.Implemented(tc.value); got != tc.want {
			t.Errorf("%s ok %q, value %q: implemented %t, want %t", tc.typ, tc.ok, tc.value, got, tc.want)
		}
	}
	s := &Setting{Type: TypeString, Report: []string{"usePodCidr"}}
	if !s.Implemented("10.65.0.0/16") || s.Implemented("usePodCidr") {
		t.Error("report lists the only values that warn")
	}
	if !(&Setting{Type: TypeBool, AnyOK: true}).Implemented("true") {
		t.Error(`ok ["*"] never warns`)
	}
}

func TestCheckFelixConfiguration(t *testing.T) {
	doc := `{"kind":"FelixConfiguration","metadata":{"name":"default"},"spec":{
		"bpfEnabled": true, "iptablesBackend": "Auto", "iptablesPostWriteCheckInterval": "5s",
		"iptablesLockProbeInterval": "70ms", "wireguardKeepAlive": "0s", "nftablesMode": "Enabled",
		"routeTableRanges": [{"min": 1, "max": 250}], "healthTimeoutOverrides": [{"name": "x", "timeout": "5s"}],
		"bpfConntrackTimeouts": {"tcpSynSent": "20s"}, "nodeSelector": "all()", "logSeverityScreen": "Debug"}}`
	got := fields(t, FelixConfiguration, doc)
	want := "spec.bpfEnabled=true spec.healthTimeoutOverrides=x=5s spec.iptablesLockProbeInterval=70ms"
	if got != want {
		t.Errorf("findings\n got %s\nwant %s", got, want)
	}
}

func TestCheckOtherKinds(t *testing.T) {
	for _, tc := range []struct{ kind, doc, want string }{
		{BGPPeer, `{"spec":{"localWorkloadSelector":"app == 'x'","asNumber":65001}}`, ""},
		{BGPConfiguration, `{"spec":{"localWorkloadPeeringIPV4":"169.254.0.179","localWorkloadPeeringIPV6":"fe80::179"}}`, ""},
		{BGPConfiguration, `{"spec":{"ipv6NormalRoutePriority":512}}`, ""},
		{BGPConfiguration, `{"spec":{"programClusterRoutes":"Enabled","ipv4NormalRoutePriority":1024}}`, ""},
		{BGPConfiguration, `{"spec":{"programClusterRoutes":"Disabled"}}`, ""},
		{IPPool, `{"spec":{"cidr":"10.65.0.0/16","ipipMode":"Always","assignmentMode":"Manual"}}`, "spec.assignmentMode=Manual"},
		{Node, `{"spec":{"bgp":{"ipv4Address":"198.18.0.1/24","ipv4IPIPTunnelAddr":"10.65.0.1"}}}`, ""},
		{NetConf, `{"name":"n","type":"calico","num_queues":4,"feature_control":{"floating_ips":true,"ip_addrs_no_ipam":false},
			"policy":{"type":"k8s"},"kubernetes":{"kubeconfig":"/etc/k"},"windows_use_single_network":true,
			"args":{"org.apache.mesos":{"network_info":{"name":"x"}}},"ipam":{"type":"host-local","subnet":"usePodCidr"}}`,
			"args.org.apache.mesos=network_info=name=x feature_control.floating_ips=true ipam.subnet=usePodCidr kubernetes.kubeconfig=/etc/k num_queues=4 policy.type=k8s"},
	} {
		if got := fields(t, tc.kind, tc.doc); got != tc.want {
			t.Errorf("%s %s:\n got %s\nwant %s", tc.kind, tc.doc, got, tc.want)
		}
	}
}

func fields(t *testing.T, kind, doc string) string {
	t.Helper()
	fs, err := CheckJSON(kind, "obj", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, f := range fs {
		parts = append(parts, f.Field+"="+f.Value)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func TestFelixSpecValues(t *testing.T) {
	spec := map[string]any{"netlinkTimeout": "15s", "dataplaneWatchdogTimeout": "25s", "reportingInterval": "10s", "featureGates": ""}
	values, fields, err := FelixSpecValues(spec)
	if err != nil {
		t.Fatal(err)
	}
	if values["NetlinkTimeoutSecs"] != "15s" || fields["NetlinkTimeoutSecs"] != "netlinkTimeout" ||
		values["DataplaneWatchdogTimeout"] != "25s" || len(values) != 2 {
		t.Errorf("values %v fields %v", values, fields)
	}
}

// TestPartsParseAsTheWhole: each kind parsed from its part of notimplemented.toml is what the
// whole file gives for it, and no entry of the file is in no part.
func TestPartsParseAsTheWhole(t *testing.T) {
	whole, err := parseList(listText)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, kind := range Kinds {
		part, err := parseKind(listText, kind)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if !reflect.DeepEqual(part, whole[kind]) {
			t.Errorf("%s: its part parses to %d settings, the whole file has %d (or they differ)", kind, len(part), len(whole[kind]))
		}
		n += len(part)
	}
	total := 0
	for _, s := range whole {
		total += len(s)
	}
	if n != total || n == 0 {
		t.Errorf("the parts hold %d settings, the file %d", n, total)
	}
}

// TestCheckPathsMatchTheList: the paths read from the list's text without parsing it are the
// paths of the parsed settings CheckJSON looks up, for every kind (a felix parameter without a
// FelixConfiguration field is never in a document).
func TestCheckPathsMatchTheList(t *testing.T) {
	for _, kind := range Kinds {
		var want []string
		for _, s := range objectSettings(kind) {
			if s.Kind == Felix && s.Field != "" {
				want = append(want, "spec."+s.Field)
			} else if s.Kind != Felix {
				want = append(want, s.Name)
			}
		}
		got, err := checkPaths(listText, kind)
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(got)
		sort.Strings(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: paths %v, want %v", kind, got, want)
		}
	}
}
