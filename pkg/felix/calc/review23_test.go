package calc

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/datastore"

	"github.com/calico-host/calico-host/pkg/syncer"
)

// asSyncerDelivers is what the syncer delivers for a raw value: the decoded value, or nil
// (absent) when felix's decoder fails (syncer.decodeKV).
func asSyncerDelivers(key, value string) syncer.Update {
	v, err := syncer.FailClosedDecoder(datastore.IDOf(key), []byte(value), 7)
	if err != nil {
		v = nil
	}
	return syncer.Update{ID: datastore.IDOf(key), Value: v, Revision: 7}
}

// TestUndecodableFelixConfigurationKeepsFailsafe (review of issue 23, point 1): a
// FelixConfiguration with one field of the wrong JSON type (a port as a string, as etcdctl by
// hand writes it) does not decode, so it is absent and every field falls back to its default:
// the failsafe ports the administrator closed ([]) open again (tcp:22, 179, 2379, ...) on every
// host endpoint. An invalid one keeps its valid fields (TestInvalidFelixConfigurationKeepsValidFields).
func TestUndecodableFelixConfigurationKeepsFailsafe(t *testing.T) {
	g := newTestGraph("h1")
	snapshot(g, asSyncerDelivers(resKey("felixconfigurations", "", "node.h1"), `{"kind":"FelixConfiguration",`+v3+`,
	  "metadata":{"name":"node.h1"},"spec":{"failsafeInboundHostPorts":[],"vxlanPort":"4789"}}`))
	g.Flush()
	n := g.Facts().Config.Node
	if n == nil || n.FailsafeInboundHostPorts == nil || len(*n.FailsafeInboundHostPorts) != 0 {
		t.Fatalf("node.h1 = %+v, want failsafeInboundHostPorts [] kept", n)
	}
}
