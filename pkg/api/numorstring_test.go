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
	// Project Calico's messages (numorstring.Port); a number that is not a uint16 fails as
	// encoding/json fails it, with the field named when decoding a resource.
	for bad, want := range map[string]string{
		`70000`:         "json: cannot unmarshal number 70000 into Go value of type uint16",
		`-1`:            "json: cannot unmarshal number -1 into Go value of type uint16",
		`true`:          "json: cannot unmarshal bool into Go value of type uint16",
		`"70000"`:       "invalid port format (70000)",
		`"70000:70001"`: "invalid minimum port number in range (70000:70001)",
		`"1:70000"`:     "invalid maximum port number in range (1:70000)",
		`"9000:80"`:     "minimum port number (9000) is greater than maximum port number (80) in port range",
		`"1:x"`:         "invalid name for named port (1:x)",
		`""`:            "invalid name for named port ()",
	} {
		var p Port
		if err := json.Unmarshal([]byte(bad), &p); err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %s", bad, err, want)
		}
	}
	var r Rule
	err := json.Unmarshal([]byte(`{"action":"Allow","source":{"ports":[22,65536]}}`), &r)
	if want := "json: cannot unmarshal number 65536 into Go struct field EntityRule.source.ports of type uint16"; err == nil || err.Error() != want {
		t.Errorf("rule: got %v, want %s", err, want)
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
	for in, want := range map[string]ASNumber{`"1.10"`: 65546, `64512`: 64512, `"4294967295"`: 4294967295} {
		var a ASNumber
		if err := json.Unmarshal([]byte(in), &a); err != nil || a != want {
			t.Errorf("%s: %d %v, want %d", in, a, err, want)
		}
	}
	// Project Calico's messages: a number out of range fails as a value that is not a string.
	for in, want := range map[string]string{
		`4294967296`: "json: cannot unmarshal number into Go struct field BGPPeerSpec.asNumber of type string",
		`-1`:         "json: cannot unmarshal number into Go struct field BGPPeerSpec.asNumber of type string",
		`"1.2.3"`:    "invalid AS Number format (1.2.3)",
		`"65536.1"`:  "invalid AS Number format (65536.1)",
	} {
		var spec BGPPeerSpec
		if err := json.Unmarshal([]byte(`{"asNumber":`+in+`}`), &spec); err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %s", in, err, want)
		}
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
