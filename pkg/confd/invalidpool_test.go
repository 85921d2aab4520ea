package confd

import (
	"strings"
	"testing"

	"github.com/calico-host/calico-host/pkg/datastore"
)

// TestInvalidPoolUsedAsWritten: an IPPool that fails validation (here a block size no tool
// writes) but whose CIDR parses is used as written, with a warning naming it: absent, its
// "BGP export is disabled" rule vanished and this host's blocks in it were exported. A pool
// whose CIDR does not parse is absent.
func TestInvalidPoolUsedAsWritten(t *testing.T) {
	pools := datastore.ResourcePrefix + "ippools/"
	in := inputsFromKVs(t, "a", []kv{
		{Key: datastore.ResourcePrefix + "nodes/a", Value: []byte(`{"kind":"Node","apiVersion":"projectcalico.org/v3",
		  "metadata":{"name":"a"},"spec":{"bgp":{"ipv4Address":"198.18.0.1/24"}}}`)},
		{Key: pools + "noexport", Value: []byte(`{"kind":"IPPool","apiVersion":"projectcalico.org/v3","metadata":{"name":"noexport"},
		  "spec":{"cidr":"10.65.192.0/18","blockSize":99,"disableBGPExport":true}}`)},
		{Key: pools + "bad-cidr", Value: []byte(`{"kind":"IPPool","apiVersion":"projectcalico.org/v3","metadata":{"name":"bad-cidr"},
		  "spec":{"cidr":"10.66.0.0/99"}}`)},
	})
	m := build(in, "a")
	got := m.Families[0].Pools
	if len(got) != 1 || got[0].CIDR.String() != "10.65.192.0/18" || got[0].Export {
		t.Fatalf("pools = %+v, want noexport, not exported", got)
	}
	if w := strings.Join(strs(m.Warnings), "\n"); !strings.Contains(w, "IPPool noexport") || !strings.Contains(w, "used as written") {
		t.Errorf("warnings do not name the invalid pool:\n%s", w)
	}
}

// inputsFromKVs decodes raw values as confd's syncer does (an undecodable or invalid value is
// absent) into a store for node.
func inputsFromKVs(t *testing.T, node string, kvs []kv) *Inputs {
	t.Helper()
	var ok []kv
	for _, e := range kvs {
		if v, err := Decode(datastore.IDOf(e.Key), e.Value, 1); err == nil && v != nil {
			ok = append(ok, e)
		}
	}
	s := NewStore(node)
	s.Apply(messageFrom(t, ok))
	return s.Inputs()
}
