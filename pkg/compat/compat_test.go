package compat

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"
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

func TestReporterLogsOnceAndKeepsTheGauge(t *testing.T) {
	var buf bytes.Buffer
	r := NewReporter("felix", zerolog.New(&buf))
	bpf, _ := FelixParam("bpfenabled")
	f := Finding{Object: "FelixConfiguration default", Field: "spec.bpfEnabled", Value: "true", Setting: bpf}
	g := Finding{Object: "environment", Field: "FELIX_NETLINKTIMEOUTSECS", Value: "20", Setting: bpf}
	if n := len(r.Replace([]Finding{f, g})); n != 2 {
		t.Fatalf("logged %d, want 2", n)
	}
	if n := len(r.Replace([]Finding{f, g})); n != 0 {
		t.Fatalf("logged %d again", n)
	}
	if got := testutil.CollectAndCount(r.Collector()); got != 2 {
		t.Fatalf("gauge has %d series, want 2", got)
	}
	g.Value = "30"
	if n := len(r.Replace([]Finding{g})); n != 1 {
		t.Fatalf("a changed value logged %d times, want 1", n)
	}
	if got := testutil.CollectAndCount(r.Collector()); got != 1 {
		t.Fatalf("gauge has %d series after one went away, want 1", got)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d log lines, want 3:\n%s", len(lines), buf.String())
	}
	var rec map[string]string
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["object"] != "FelixConfiguration default" || rec["field"] != "spec.bpfEnabled" || rec["value"] != "true" || rec["reason"] == "" {
		t.Errorf("log line %v", rec)
	}
}
