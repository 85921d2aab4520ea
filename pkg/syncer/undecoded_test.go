package syncer

import (
	"slices"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// TestFailClosedDecoderUndecodable: a resource of a kind that fails closed whose value is JSON
// but does not decode comes back as *Invalid holding everything that decodes; exactly the values
// that do not decode are left out. A value that is not a JSON object, and an undecodable
// resource of another kind, are absent.
func TestFailClosedDecoderUndecodable(t *testing.T) {
	const pre = "/calico/resources/v3/projectcalico.org/"
	for _, c := range []struct {
		key, value string
		leftOut    []string
		check      func(api.Resource) bool
	}{
		{"globalnetworksets/s", `{"kind":"GlobalNetworkSet","metadata":{"name":"s","labels":{"role":"x","rev":2}},
		  "spec":{"nets":["10.65.0.1/32",5,"10.65.0.2/32",{}]}}`,
			[]string{"metadata.labels.rev", "spec.nets[1]", "spec.nets[3]"},
			func(r api.Resource) bool {
				s := r.(*api.GlobalNetworkSet)
				return s.Labels["role"] == "x" && len(s.Labels) == 1 && slices.Equal(s.Spec.Nets, []string{"10.65.0.1/32", "10.65.0.2/32"})
			}},
		{"globalnetworkpolicies/p", `{"kind":"GlobalNetworkPolicy","metadata":{"name":"p"},"spec":{"selector":"a == 'b'",
		  "ingress":[{"action":"Deny"},{"action":"Deny","protocol":"TCP","destination":{"ports":["9000:8000",22]}}]}}`,
			[]string{"spec.ingress[1].destination.ports[0]"},
			func(r api.Resource) bool {
				p := r.(*api.GlobalNetworkPolicy)
				return p.Spec.Selector == "a == 'b'" && len(p.Spec.Ingress) == 2 && len(p.Spec.Ingress[1].Destination.Ports) == 1
			}},
		{"tiers/t", `{"kind":"Tier","metadata":{"name":"t"},"spec":{"order":"10","defaultAction":"Pass"}}`,
			[]string{"spec.order"},
			func(r api.Resource) bool {
				t := r.(*api.Tier)
				return t.Spec.Order == nil && t.Spec.DefaultAction == api.ActionPass
			}},
		{"hostendpoints/h", `{"kind":"HostEndpoint","metadata":{"name":"h"},"spec":{"node":"n","interfaceName":"eth0",
		  "ports":[{"name":"web","protocol":"TCP","port":80800}]}}`,
			[]string{"spec.ports[0].port"},
			func(r api.Resource) bool {
				h := r.(*api.HostEndpoint)
				return h.Spec.Node == "n" && h.Spec.InterfaceName == "eth0"
			}},
		{"ippools/x", `{"kind":"IPPool","metadata":{"name":"x"},"spec":{"cidr":"10.65.0.0/16","blockSize":"26","disableBGPExport":true}}`,
			[]string{"spec.blockSize"},
			func(r api.Resource) bool {
				p := r.(*api.IPPool)
				return p.Spec.CIDR == "10.65.0.0/16" && p.Spec.DisableBGPExport
			}},
	} {
		v, err := FailClosedDecoder(datastore.IDOf(pre+c.key), []byte(c.value), 3)
		inv, ok := v.(*Invalid)
		if err != nil || !ok {
			t.Errorf("%s: %T %v, want *Invalid", c.key, v, err)
			continue
		}
		if !slices.Equal(inv.LeftOut, c.leftOut) || inv.Err == nil || !c.check(inv.Value) {
			t.Errorf("%s: left out %q (%v), value %+v; want left out %q", c.key, inv.LeftOut, inv.Err, inv.Value, c.leftOut)
		}
	}
	for _, c := range []struct{ key, value string }{
		{"globalnetworksets/s", `{"kind":"GlobalNetworkSet","metadata":{"name":"s"},"spec":{"nets":["10.65.0.1/32"`},
		{"globalnetworksets/s", `["10.65.0.1/32"]`},
		{"bgppeers/x", `{"kind":"BGPPeer","metadata":{"name":"x"},"spec":{"peerIP":5}}`},
		// Another kind under a policy's key: not a policy with a bad field (as one with an
		// empty selector, it would drop everything everywhere).
		{"globalnetworkpolicies/x", `{"kind":"Node","metadata":{"name":"x"},"spec":{"bgp":{"ipv4Address":"198.18.0.99/24"}}}`},
		{"globalnetworkpolicies/x", `{"kind":5,"metadata":{"name":"x"},"spec":{"selector":"all()"}}`},
	} {
		if v, err := FailClosedDecoder(datastore.IDOf(pre+c.key), []byte(c.value), 3); err == nil || v != nil {
			t.Errorf("%s %s: %T %v, want absent with an error", c.key, c.value, v, err)
		}
	}
}

// TestInvalidUndecoded: Undecoded matches a path left out, the values inside it and those
// holding it, nothing else.
func TestInvalidUndecoded(t *testing.T) {
	inv := &Invalid{LeftOut: []string{"spec.selector", "spec.ingress[1].destination.ports[0]", "metadata.labels"}}
	for path, want := range map[string]bool{"spec.selector": true, "spec.ingress": true, "spec.ingress[1]": true,
		"spec.sel": false, "spec.selectorX": false, "spec.egress": false, "spec": true,
		"metadata.labels.a": true, "metadata.name": false, "spec.ingress[1].destination.ports[0].x": true} {
		if got := inv.Undecoded(path); got != want {
			t.Errorf("Undecoded(%q) = %v, want %v", path, got, want)
		}
	}
	if (*Invalid)(nil).Undecoded("spec") {
		t.Error("a nil Invalid has values left out")
	}
}
