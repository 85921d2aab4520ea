package confd

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/datastore"
)

// TestUndecodablePoolKeepsExportDisabled (review of issue 23, point 1): an IPPool with one
// field of the wrong JSON type (blockSize as a string) does not decode, so it is absent, and
// this host's blocks in it are exported although the pool says disableBGPExport: the hole
// TestInvalidPoolUsedAsWritten closed for invalid pools, by another path.
func TestUndecodablePoolKeepsExportDisabled(t *testing.T) {
	pools := datastore.ResourcePrefix + "ippools/"
	in := inputsFromKVs(t, "a", []kv{
		{Key: datastore.ResourcePrefix + "nodes/a", Value: []byte(`{"kind":"Node","apiVersion":"projectcalico.org/v3",
		  "metadata":{"name":"a"},"spec":{"bgp":{"ipv4Address":"198.18.0.1/24"}}}`)},
		{Key: pools + "noexport", Value: []byte(`{"kind":"IPPool","apiVersion":"projectcalico.org/v3","metadata":{"name":"noexport"},
		  "spec":{"cidr":"10.65.192.0/18","blockSize":"26","disableBGPExport":true}}`)},
	})
	m := build(in, "a")
	got := m.Families[0].Pools
	if len(got) != 1 || got[0].CIDR.String() != "10.65.192.0/18" || got[0].Export {
		t.Fatalf("pools = %+v, want noexport, not exported", got)
	}
}
