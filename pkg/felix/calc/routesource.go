package calc

// RouteSource says where the routes to other hosts' workloads come from (felix's RouteSource).
type RouteSource uint8

// Route sources; the zero value is Project Calico's default, CalicoIPAM.
const (
	RouteSourceCalicoIPAM  RouteSource = iota // their IPAM blocks (and borrowed addresses)
	RouteSourceWorkloadIPs                    // the addresses of their workload endpoints
)

// SetRouteSource gives the graph felix's RouteSource as its configuration resolves it from the
// datastore's part (and the local sources): the graph calls resolve whenever that part changes,
// so the parameter is parsed and ranked in felix's configuration only. Without it routes come
// from IPAM. Call it before the graph receives messages.
func (g *Graph) SetRouteSource(resolve func(DatastoreConfig) RouteSource) {
	g.routeSource = resolve
	g.updateRouteSource()
}

// updateRouteSource applies the route source for the current datastore configuration.
func (g *Graph) updateRouteSource() {
	src := RouteSourceCalicoIPAM
	if g.routeSource != nil {
		src = g.routeSource(g.config.datastoreConfig())
	}
	g.routes.setWorkloadIPs(src == RouteSourceWorkloadIPs)
}
