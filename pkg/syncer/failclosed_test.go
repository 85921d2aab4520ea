package syncer

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// TestFailClosedDecoder: an invalid policy, tier, profile, network set, host endpoint, pool or
// node comes back as *Invalid (its consumer fails closed); an invalid object of another kind, and a valid
// policy, decode as DefaultDecoder does.
func TestFailClosedDecoder(t *testing.T) {
	const pre = "/calico/resources/v3/projectcalico.org/"
	badGNP := `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"p"},
	  "spec":{"selector":"all()","ingress":[{"action":"Deny","source":{"nets":["10.0.0.0/99"]}}]}}`
	v, err := FailClosedDecoder(datastore.IDOf(pre+"globalnetworkpolicies/p"), []byte(badGNP), 3)
	inv, ok := v.(*Invalid)
	if err != nil || !ok {
		t.Fatalf("invalid policy: %T %v, want *Invalid", v, err)
	}
	if _, ok := inv.Value.(*api.GlobalNetworkPolicy); !ok || inv.Err == nil {
		t.Fatalf("Invalid = %+v", inv)
	}
	if _, err := DefaultDecoder(datastore.IDOf(pre+"globalnetworkpolicies/p"), []byte(badGNP), 3); err == nil {
		t.Fatal("DefaultDecoder accepted the invalid policy")
	}
	for _, kv := range []struct{ plural, value string }{
		{"profiles/p", `{"kind":"Profile","apiVersion":"projectcalico.org/v3","metadata":{"name":"p"},"spec":{"ingress":[{"action":"Bogus"}]}}`},
		{"globalnetworksets/s", `{"kind":"GlobalNetworkSet","apiVersion":"projectcalico.org/v3","metadata":{"name":"s"},"spec":{"nets":["x"]}}`},
		{"networksets/ns/s", `{"kind":"NetworkSet","apiVersion":"projectcalico.org/v3","metadata":{"name":"s","namespace":"ns"},"spec":{"nets":["x"]}}`},
		{"hostendpoints/h", `{"kind":"HostEndpoint","apiVersion":"projectcalico.org/v3","metadata":{"name":"h"},"spec":{"node":"n","expectedIPs":["x"]}}`},
		{"tiers/t", `{"kind":"Tier","apiVersion":"projectcalico.org/v3","metadata":{"name":"t"},"spec":{"defaultAction":"x"}}`},
		{"ippools/x", `{"kind":"IPPool","apiVersion":"projectcalico.org/v3","metadata":{"name":"x"},"spec":{"cidr":"10.0.0.0/99"}}`},
		{"nodes/n", `{"kind":"Node","apiVersion":"projectcalico.org/v3","metadata":{"name":"n"},"spec":{"ipv4VXLANTunnelAddr":"x"}}`},
	} {
		if v, err := FailClosedDecoder(datastore.IDOf(pre+kv.plural), []byte(kv.value), 3); err != nil {
			t.Errorf("invalid %s: %v, want *Invalid", kv.plural, err)
		} else if _, ok := v.(*Invalid); !ok {
			t.Errorf("invalid %s decoded as %T, want *Invalid", kv.plural, v)
		}
	}
	badPeer := `{"kind":"BGPPeer","apiVersion":"projectcalico.org/v3","metadata":{"name":"x"},"spec":{"peerIP":"not-an-ip"}}`
	if v, err := FailClosedDecoder(datastore.IDOf(pre+"bgppeers/x"), []byte(badPeer), 3); err == nil || v != nil {
		t.Fatalf("invalid BGP peer: %v %v, want an error", v, err)
	}
	good := `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"p"},"spec":{"selector":"all()"}}`
	if v, err := FailClosedDecoder(datastore.IDOf(pre+"globalnetworkpolicies/p"), []byte(good), 3); err != nil {
		t.Fatalf("valid policy: %v", err)
	} else if _, ok := v.(*api.GlobalNetworkPolicy); !ok {
		t.Fatalf("valid policy decoded as %T", v)
	}
}

// TestFailClosedDecoderFelixConfiguration: an invalid FelixConfiguration comes back without its
// fields that are invalid on their own, the others kept; one whose fields conflict (each valid
// alone) is absent.
func TestFailClosedDecoderFelixConfiguration(t *testing.T) {
	const key = "/calico/resources/v3/projectcalico.org/felixconfigurations/default"
	bad := `{"kind":"FelixConfiguration","apiVersion":"projectcalico.org/v3","metadata":{"name":"default"},
	  "spec":{"logSeverityScreen":"Debug","vxlanPort":70000,"failsafeInboundHostPorts":[{"protocol":"ICMP","port":1}]}}`
	v, err := FailClosedDecoder(datastore.IDOf(key), []byte(bad), 3)
	inv, ok := v.(*Invalid)
	if err != nil || !ok {
		t.Fatalf("decoded %T %v, want *Invalid", v, err)
	}
	fc := inv.Value.(*api.FelixConfiguration)
	if fc.Spec.LogSeverityScreen != "Debug" || fc.Spec.VXLANPort != nil || fc.Spec.FailsafeInboundHostPorts != nil {
		t.Errorf("spec = %+v, want logSeverityScreen only", fc.Spec)
	}
	conflict := `{"kind":"FelixConfiguration","apiVersion":"projectcalico.org/v3","metadata":{"name":"default"},
	  "spec":{"routeTableRange":{"min":1,"max":250},"routeTableRanges":[{"min":1,"max":250}]}}`
	if v, err := FailClosedDecoder(datastore.IDOf(key), []byte(conflict), 3); err == nil || v != nil {
		t.Errorf("conflicting fields: %v %v, want absent", v, err)
	}
}
