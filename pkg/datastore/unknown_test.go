package datastore

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
)

func TestKeepUnknownFields(t *testing.T) {
	node := reflect.TypeOf(&api.Node{})
	for _, tc := range []struct {
		name, stored, updated, want string
	}{
		{"top, metadata and nested spec",
			`{"kind":"Node","metadata":{"name":"a","x":1},"spec":{"bgp":{"ipv4Address":"198.18.0.1/24","y":2},"z":3},"w":4}`,
			`{"kind":"Node","metadata":{"name":"a"},"spec":{"bgp":{"ipv4Address":"198.18.0.2/24"}}}`,
			`{"kind":"Node","metadata":{"name":"a","x":1},"spec":{"bgp":{"ipv4Address":"198.18.0.2/24","y":2},"z":3},"w":4}`},
		{"a known field left out stays out",
			`{"metadata":{"name":"a","labels":{"k":"v"}},"spec":{"ipv4VXLANTunnelAddr":"10.65.0.1"}}`,
			`{"metadata":{"name":"a"},"spec":{}}`,
			`{"metadata":{"name":"a"},"spec":{}}`},
		{"known keys in another case are known",
			`{"metadata":{"Name":"a"},"spec":{"IPv4VXLANTunnelAddr":"10.65.0.1"}}`,
			`{"metadata":{"name":"a"},"spec":{}}`,
			`{"metadata":{"name":"a"},"spec":{}}`},
		{"list elements: unchanged keeps, changed or missing does not",
			`{"spec":{"addresses":[{"address":"198.18.0.1","u":1},{"address":"198.18.0.2","u":2},{"address":"198.18.0.3","u":3}]}}`,
			`{"spec":{"addresses":[{"address":"198.18.0.1"},{"address":"198.18.0.9"}]}}`,
			`{"spec":{"addresses":[{"address":"198.18.0.1","u":1},{"address":"198.18.0.9"}]}}`},
		{"status, and labels that are data not fields",
			`{"metadata":{"labels":{"a":"b","c":"d"}},"status":{"podCIDRs":["x"],"bgp":{"v":1}}}`,
			`{"metadata":{"labels":{"a":"b"}},"status":{}}`,
			`{"metadata":{"labels":{"a":"b"}},"status":{"bgp":{"v":1}}}`},
		{"garbage stored: nothing kept", `not json`, `{"spec":{}}`, `{"spec":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := keepUnknownFields([]byte(tc.stored), []byte(tc.updated), node)
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("got %s\nwant %s", got, tc.want)
			}
		})
	}
}
