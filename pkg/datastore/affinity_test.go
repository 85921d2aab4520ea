package datastore_test

import (
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// TestDecodeAffinityStrict: an affinity decodes only with a canonical block CIDR of the key's
// family, a state Project Calico writes (or none), and nothing after the JSON value. Anything else
// is an error (the syncer logs it with the key and treats the key as absent).
func TestDecodeAffinityStrict(t *testing.T) {
	good := `{"state":"confirmed","deleted":false}`
	tests := []struct {
		name, key, value, wantErr string
	}{
		{"confirmed", datastore.AffinityKey("h", "10.65.0.0/26"), good, ""},
		{"pending v6", datastore.AffinityKey("h", "fd5c:1::/122"), `{"state":"pending","deleted":false}`, ""},
		{"pendingDeletion", datastore.AffinityKey("h", "10.65.0.0/26"), `{"state":"pendingDeletion","deleted":true}`, ""},
		{"no state (older releases)", datastore.AffinityKey("h", "10.65.0.0/26"), `{}`, ""},
		{"trailing newline", datastore.AffinityKey("h", "10.65.0.0/26"), good + "\n", ""},
		{"unknown state", datastore.AffinityKey("h", "10.65.0.0/26"), `{"state":"claimed"}`, "invalid affinity state"},
		{"state with a line break", datastore.AffinityKey("h", "10.65.0.0/26"), `{"state":"confirmed\nprotocol static {}"}`, "invalid affinity state"},
		{"state of the wrong type", datastore.AffinityKey("h", "10.65.0.0/26"), `{"state":7}`, "cannot unmarshal"},
		{"data after the value", datastore.AffinityKey("h", "10.65.0.0/26"), good + ` {"state":"x"}`, "data after"},
		{"not JSON", datastore.AffinityKey("h", "10.65.0.0/26"), `confirmed`, "invalid character"},
		{"host bits set", datastore.HostPrefix + "h/ipv4/block/10.65.0.1-26", good, "not canonical"},
		{"prefix too long", datastore.HostPrefix + "h/ipv4/block/10.65.0.0-33", good, "bad block CIDR"},
		{"no prefix length", datastore.HostPrefix + "h/ipv4/block/10.65.0.0", good, "bad block CIDR"},
		{"IPv6 not canonical", datastore.HostPrefix + "h/ipv6/block/fd5c:1:0:0::-122", good, "not canonical"},
		{"IPv6 block under ipv4", datastore.HostPrefix + "h/ipv4/block/fd5c:1::-122", good, "family"},
		{"IPv4 block under ipv6", datastore.HostPrefix + "h/ipv6/block/10.65.0.0-26", good, "family"},
		{"leading zeros", datastore.HostPrefix + "h/ipv4/block/10.065.0.0-26", good, "bad block CIDR"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := datastore.Decode(tc.key, []byte(tc.value), 1)
			if tc.wantErr == "" {
				if _, ok := v.(*api.BlockAffinity); err != nil || !ok {
					t.Fatalf("Decode = %#v, %v; want an affinity", v, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Decode = %#v, %v; want an error containing %q", v, err, tc.wantErr)
			}
		})
	}
}
