package datastore_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// TestParseKey: every layout calico-host reads parses to its typed ID, whose Key is the key
// again; other keys are UnknownKeys; a key of a known layout that names no object is an
// UnknownKey with the reason.
func TestParseKey(t *testing.T) {
	wep, _ := api.KindByPlural("workloadendpoints")
	pool, _ := api.KindByPlural("ippools")
	for _, tc := range []struct {
		key  string
		want datastore.ID
	}{
		{datastore.ResourcePrefix + "workloadendpoints/ns1/h1-k8s-a-eth0", datastore.NewResourceID(wep, "ns1", "h1-k8s-a-eth0")},
		{datastore.ResourcePrefix + "ippools/p1", datastore.NewResourceID(pool, "", "p1")},
		{datastore.BlockKey("10.65.0.0/26"), datastore.BlockID{CIDR: netip.MustParsePrefix("10.65.0.0/26")}},
		{datastore.BlockKey("fd5c:1::/122"), datastore.BlockID{CIDR: netip.MustParsePrefix("fd5c:1::/122")}},
		{datastore.AffinityKey("h1", "10.65.0.0/26"), datastore.AffinityID{Host: "h1", CIDR: netip.MustParsePrefix("10.65.0.0/26")}},
		{datastore.HandleKey("k8s-pod-network.abc"), datastore.HandleID{Handle: "k8s-pod-network.abc"}},
		{datastore.IPAMConfigKey, datastore.IPAMConfigID{}},
		{datastore.ResourcePrefix + "futurekinds/x", datastore.UnknownKey(datastore.ResourcePrefix + "futurekinds/x")},
		{datastore.ResourcePrefix + "workloadendpoints/no-namespace", datastore.UnknownKey(datastore.ResourcePrefix + "workloadendpoints/no-namespace")},
		{datastore.ResourcePrefix + "ippools/ns/p1", datastore.UnknownKey(datastore.ResourcePrefix + "ippools/ns/p1")},
		{datastore.HandlePrefix + "a/b", datastore.UnknownKey(datastore.HandlePrefix + "a/b")},
		{"/a/b", datastore.UnknownKey("/a/b")},
	} {
		got, err := datastore.ParseKey(tc.key)
		if err != nil || got.Key() != tc.key || got != tc.want {
			t.Errorf("ParseKey(%q) = %#v, %v; want %#v", tc.key, got, err, tc.want)
		}
	}
	for key, why := range map[string]string{
		datastore.BlockPrefix + "ipv4/block/10.65.0.0-33":  "bad block CIDR",
		datastore.HostPrefix + "h/ipv4/block/10.65.0.1-26": "not canonical",
		datastore.HostPrefix + "h/ipv6/block/10.65.0.0-26": "family",
	} {
		got, err := datastore.ParseKey(key)
		if err == nil || !strings.Contains(err.Error(), why) || got != datastore.UnknownKey(key) {
			t.Errorf("ParseKey(%q) = %#v, %v; want an UnknownKey and an error about %s", key, got, err, why)
		}
	}
}
