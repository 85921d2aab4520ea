package confd

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
)

// TestBindModeEveryCombination renders, and checks with `bird -p`, every combination of
// bindMode, listen port, peer port, sourceAddress and family, with a mesh session, an explicit
// peer and a local workload session in each. Under bindMode NodeIP every session's local (and
// so listening) address is the node's address of its family.
func TestBindModeEveryCombination(t *testing.T) {
	requireBIRD(t)
	wl := &api.WorkloadEndpoint{ObjectMeta: api.ObjectMeta{Name: "wl", Namespace: "ns", Labels: map[string]string{"bgp": "yes"}},
		Spec: api.WorkloadEndpointSpec{Node: "a", IPNetworks: []string{"10.65.0.5/32", "fd5c:1::5/128"}}}
	for _, bind := range []string{"", "None", "NodeIP"} {
		for _, listen := range []uint16{0, 1179} {
			for _, peerPort := range []string{"", "1180"} {
				for _, source := range []string{"", "UseNodeIP", "None"} {
					for _, peerIP := range []string{"198.51.100.1", "2001:db8::1"} {
						name := fmt.Sprintf("bind=%s/listen=%d/port=%s/source=%s/%s", bind, listen, peerPort, source, peerIP)
						t.Run(name, func(t *testing.T) {
							addr := peerIP
							if peerPort != "" {
								addr = net.JoinHostPort(peerIP, peerPort)
							}
							in := testInputs(
								bgpConfig("default", api.BGPConfigurationSpec{BindMode: bind, ListenPort: listen}),
								testNode("a", "198.18.0.1/24", "fd5c:ff::1/64", nil),
								testNode("b", "198.18.0.2/24", "fd5c:ff::2/64", nil),
								bgpPeer("ext", api.BGPPeerSpec{PeerIP: addr, ASNumber: asn(65001), SourceAddress: source}),
								bgpPeer("wl", api.BGPPeerSpec{LocalWorkloadSelector: "bgp == 'yes'", ASNumber: asn(65002)}),
								wl)
							checkBindMode(t, in, bind == "NodeIP")
						})
					}
				}
			}
		}
	}
}

func checkBindMode(t *testing.T, in *Inputs, strict bool) {
	t.Helper()
	cfg := testConfig(t.TempDir())
	if _, err := NewEngine(cfg, "a", ExecRunner, zerolog.Nop()).Sync(context.Background(), in); err != nil {
		t.Fatalf("render or bird -p: %v", err)
	}
	m := build(in, "a")
	sessions := 0
	for _, f := range m.Families {
		for _, p := range f.Peers {
			sessions++
			if strict && p.SourceAddress != f.NodeIP {
				t.Errorf("%s: local address %v under bindMode NodeIP, want the node's %v", p.Name.Name(), p.SourceAddress, f.NodeIP)
			}
		}
	}
	if sessions != 5 { // mesh and workload in both families, the explicit peer in one
		t.Errorf("%d sessions, want 5", sessions)
	}
}
