package api

import (
	"encoding/json"
	"testing"
	"time"
)

func TestPortJSON(t *testing.T) {
	for in, out := range map[string]string{`80`: `80`, `"80"`: `80`, `"8000:8080"`: `"8000:8080"`, `"http-alt"`: `"http-alt"`} {
		var p Port
		if err := json.Unmarshal([]byte(in), &p); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		b, _ := json.Marshal(p)
		if string(b) != out {
			t.Errorf("%s -> %s, want %s", in, b, out)
		}
	}
	for _, bad := range []string{`70000`, `"1:x"`, `"9x"`, `true`} {
		var p Port
		if err := json.Unmarshal([]byte(bad), &p); err == nil {
			t.Errorf("%s: want error, got %+v", bad, p)
		}
	}
}

func TestProtocolJSON(t *testing.T) {
	for in, num := range map[string]uint8{`"TCP"`: 6, `6`: 6, `"UDPLite"`: 136, `58`: 58, `"ICMPv6"`: 58} {
		var p Protocol
		if err := json.Unmarshal([]byte(in), &p); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(p)
		if string(b) != in {
			t.Errorf("%s re-marshalled as %s", in, b)
		}
		if n, ok := p.NumberValue(); !ok || n != num {
			t.Errorf("%s number %d %v, want %d", in, n, ok, num)
		}
	}
	// A numeric string is that number, as in Project Calico (Neutron writes "17").
	for in, want := range map[string]string{`"17"`: `17`, `"0"`: `0`, `"256"`: `"256"`, `"tcp"`: `"tcp"`} {
		var p Protocol
		if err := json.Unmarshal([]byte(in), &p); err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(p); string(b) != want {
			t.Errorf("%s re-marshalled as %s, want %s", in, b, want)
		}
	}
}

func TestASNumberAndDuration(t *testing.T) {
	var a ASNumber
	if err := json.Unmarshal([]byte(`"1.10"`), &a); err != nil || a != 65546 {
		t.Errorf("asdot: %d %v", a, err)
	}
	var d Duration
	if err := json.Unmarshal([]byte(`"2m"`), &d); err != nil || d.Duration != 2*time.Minute {
		t.Fatal(d, err)
	}
	if b, _ := json.Marshal(d); string(b) != `"2m0s"` {
		t.Errorf("duration marshals as %s", b)
	}
}

func TestWorkloadEndpointNames(t *testing.T) {
	name := WorkloadEndpointName("host-a", "openstack", "instance-0001", "tap1234abcd")
	if name != "host--a-openstack-instance--0001-tap1234abcd" {
		t.Fatalf("got %s", name)
	}
	n, o, w, e, err := SplitWorkloadEndpointName(name)
	if err != nil || n != "host-a" || o != "openstack" || w != "instance-0001" || e != "tap1234abcd" {
		t.Errorf("split: %q %q %q %q %v", n, o, w, e, err)
	}
	if _, _, _, _, err := SplitWorkloadEndpointName("a-b"); err == nil {
		t.Error("want error for 2 parts")
	}
}

func TestPolicyDefaults(t *testing.T) {
	p := &GlobalNetworkPolicy{ObjectMeta: ObjectMeta{Name: "block"}, Spec: GlobalNetworkPolicySpec{Tier: "security", Egress: []Rule{{Action: ActionDeny}}}}
	SetDefaults(p)
	if p.Name != "block" || p.Labels[LabelTier] != "security" || len(p.Spec.Types) != 1 || p.Spec.Types[0] != PolicyTypeEgress {
		t.Errorf("defaults: %+v", p)
	}
}

func TestDSCPJSON(t *testing.T) {
	for _, c := range []struct {
		in, out string
		value   uint8
		valid   bool
	}{
		{`"AF11"`, `"AF11"`, 10, true}, {`"ef"`, `"ef"`, 46, true}, {`23`, `23`, 23, true},
		{`"10"`, `10`, 10, true}, {`64`, `64`, 64, false}, {`"AF99"`, `"AF99"`, 0, false},
	} {
		var d DSCP
		if err := json.Unmarshal([]byte(c.in), &d); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if b, _ := json.Marshal(d); string(b) != c.out {
			t.Errorf("%s re-marshalled as %s, want %s", c.in, b, c.out)
		}
		if v, ok := d.NumberValue(); ok != c.valid || (ok && v != c.value) {
			t.Errorf("%s: value %d %v, want %d %v", c.in, v, ok, c.value, c.valid)
		}
	}
	for _, bad := range []string{`-1`, `256`, `true`} {
		var d DSCP
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("%s: want error, got %+v", bad, d)
		}
	}
}
