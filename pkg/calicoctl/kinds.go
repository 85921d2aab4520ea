package calicoctl

import (
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// calicoctlAliases are the kind spellings Project Calico's calicoctl accepts that pkg/api does not
// know (it knows names, plurals and the common short forms).
var calicoctlAliases = map[string]string{
	"ipps": "IPPool", "nos": "Node", "clusterinfos": "ClusterInformation",
	"felixconfigs": "FelixConfiguration", "bgpconfigs": "BGPConfiguration",
	"bgpps": "BGPPeer", "bp": "BGPPeer", "bps": "BGPPeer",
	"bgpfs": "BGPFilter", "bf": "BGPFilter", "bfs": "BGPFilter",
	"pol": "NetworkPolicy", "pols": "NetworkPolicy", "gnetsets": "GlobalNetworkSet",
	"ipamconfigs": "IPAMConfiguration", "kubecontrollersconfig": "KubeControllersConfiguration",
	"kubecontrollersconfigs": "KubeControllersConfiguration", "reservation": "IPReservation", "reservations": "IPReservation",
}

// lookupKind resolves a kind as typed on the command line.
func lookupKind(name string) (api.KindInfo, bool) {
	if k, ok := api.LookupKind(name); ok {
		return k, true
	}
	if kind, ok := calicoctlAliases[strings.ToLower(name)]; ok {
		return api.LookupKind(kind)
	}
	return api.KindInfo{}, false
}
