package calc

import (
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// Route sources (FelixConfiguration routeSource).
const (
	RouteSourceCalicoIPAM  = "CalicoIPAM"
	RouteSourceWorkloadIPs = "WorkloadIPs"
)

// SetLocalRouteSource sets RouteSource as felix's environment or config file gives it ("": not
// set there), which takes precedence over FelixConfiguration as in felix's configuration. Call it
// before the graph receives messages.
func (g *Graph) SetLocalRouteSource(s string) {
	g.localRouteSource = s
	g.updateRouteSource()
}

// updateRouteSource applies the route source of the local setting, else of FelixConfiguration
// node.<host>, else of the selector-scoped one that applies to this host, else of default. A
// value that is not a route source is skipped, as felix's configuration ignores it, and none
// means the default, CalicoIPAM.
func (g *Graph) updateRouteSource() {
	v := parseRouteSource(g.localRouteSource)
	var scoped *api.FelixConfigurationSpec
	if sc, _ := matchScoped(g.config.scoped, g.config.node); sc != nil {
		scoped = sc.spec
	}
	for _, spec := range []*api.FelixConfigurationSpec{g.config.perHost, scoped, g.config.global} {
		if v == "" && spec != nil {
			v = parseRouteSource(spec.RouteSource)
		}
	}
	g.routes.setWorkloadIPs(v == RouteSourceWorkloadIPs)
}

// parseRouteSource is s as one of the route sources, or "" when it is not one.
func parseRouteSource(s string) string {
	for _, rs := range []string{RouteSourceCalicoIPAM, RouteSourceWorkloadIPs} {
		if strings.EqualFold(strings.TrimSpace(s), rs) {
			return rs
		}
	}
	return ""
}
