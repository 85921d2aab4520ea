package topo

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestSumMetric(t *testing.T) {
	text := `# HELP felix_ready ready
# TYPE felix_ready gauge
felix_ready 1
felix_ready_total 7
felix_local_endpoints{type="workload"} 3
felix_local_endpoints{type="host"} 2
etcd_sent{a="x}y"} 1e+06
`
	tests := []struct {
		name    string
		want    float64
		wantErr bool
	}{
		{"felix_ready", 1, false},
		{"felix_ready_total", 7, false},
		{"felix_local_endpoints", 5, false},
		{"etcd_sent", 1e6, false},
		{"felix_missing", 0, true},
		{"felix", 0, true}, // a prefix of other names is not a metric
	}
	for _, tt := range tests {
		got, err := SumMetric(text, tt.name)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("SumMetric(%s) = %v, %v; want %v (error %v)", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseGreeting(t *testing.T) {
	tests := []struct {
		line    string
		want    Greeting
		wantErr bool
	}{
		{"web-1 10.65.0.3\n", Greeting{"web-1", netip.MustParseAddr("10.65.0.3")}, false},
		{"outside fd5c:ff::2", Greeting{"outside", netip.MustParseAddr("fd5c:ff::2")}, false},
		{"garbage", Greeting{}, true},
		{"name not-an-ip", Greeting{Server: "name"}, true},
	}
	for _, tt := range tests {
		got, err := parseGreeting(tt.line)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseGreeting(%q) = %+v, %v", tt.line, got, err)
		}
	}
}

func TestResultMatches(t *testing.T) {
	host := netip.MustParseAddr("198.18.0.1")
	tests := []struct {
		name string
		r    Result
		want bool
	}{
		{"allowed as wanted", Result{Probe: Probe{Want: true}, OK: true}, true},
		{"denied as wanted", Result{Probe: Probe{Want: false}, Err: errors.New("timeout")}, true},
		{"allowed, want denied", Result{Probe: Probe{Want: false}, OK: true}, false},
		{"denied, want allowed", Result{Probe: Probe{Want: true}}, false},
		{"NAT as wanted", Result{Probe: Probe{Want: true, WantClient: host}, OK: true, Greeting: Greeting{Client: host}}, true},
		{"not NATed", Result{Probe: Probe{Want: true, WantClient: host}, OK: true,
			Greeting: Greeting{Client: netip.MustParseAddr("10.65.0.1")}}, false},
	}
	for _, tt := range tests {
		if got := tt.r.Matches(); got != tt.want {
			t.Errorf("%s: Matches() = %v", tt.name, got)
		}
	}
}

func TestMismatchError(t *testing.T) {
	results := []Result{
		{Probe: Probe{FromName: "a", ToName: "b", Proto: "tcp", Port: 80, To: netip.MustParseAddr("10.65.0.2"), Want: true}, Err: errors.New("i/o timeout")},
		{Probe: Probe{FromName: "b", ToName: "a", Proto: "icmp", To: netip.MustParseAddr("10.65.0.1")}, OK: true},
	}
	msg := mismatchError(results, []int{0, 1}).Error()
	for _, want := range []string{"2 of 2 probes", "a -> b (tcp 10.65.0.2:80): want allowed, got i/o timeout",
		"b -> a (icmp 10.65.0.1): want denied"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
}

func TestLeftoverPid(t *testing.T) {
	tests := []struct {
		name, tag string
		pid       int
		ok        bool
	}{
		{"cce2e1234-1-fab", "cce2e", 1234, true},
		{"ccdemo99-2-h1w3", "ccdemo", 99, true},
		{"ccdemo99-2-h1w3", "cce2e", 0, false},
		{"cce2e-1-fab", "cce2e", 0, false},
		{"cce2ex12-1", "cce2e", 0, false},
		{"cce2e12", "cce2e", 0, false},
	}
	for _, tt := range tests {
		pid, ok := leftoverPid(tt.name, tt.tag)
		if pid != tt.pid && tt.ok || ok != tt.ok {
			t.Errorf("leftoverPid(%q, %q) = %d, %v", tt.name, tt.tag, pid, ok)
		}
	}
}
