package calc

import "strings"

// Key prefixes the graph consumes (the etcd layout of Project Calico's etcdv3 datastore).
const (
	resourcePrefix = "/calico/resources/v3/projectcalico.org/"
	blockPrefix    = "/calico/ipam/v2/assignment/"
)

// resourceKey is a parsed v3 resource key.
type resourceKey struct {
	plural    string
	namespace string // "" for cluster-wide kinds
	name      string
}

// namespacedPlurals are the kinds whose keys carry a namespace segment.
var namespacedPlurals = map[string]bool{
	"workloadendpoints": true, "networkpolicies": true, "networksets": true, "livemigrations": true,
}

// parseResourceKey splits /calico/resources/v3/projectcalico.org/<plural>/[<ns>/]<name>.
func parseResourceKey(key string) (resourceKey, bool) {
	rest, ok := strings.CutPrefix(key, resourcePrefix)
	if !ok {
		return resourceKey{}, false
	}
	parts := strings.Split(rest, "/")
	switch {
	case namespacedPlurals[parts[0]] && len(parts) == 3 && parts[1] != "" && parts[2] != "":
		return resourceKey{plural: parts[0], namespace: parts[1], name: parts[2]}, true
	case !namespacedPlurals[parts[0]] && len(parts) == 2 && parts[1] != "":
		return resourceKey{plural: parts[0], name: parts[1]}, true
	}
	return resourceKey{}, false
}

// String is the etcd key of k.
func (k resourceKey) String() string {
	if k.namespace != "" {
		return resourcePrefix + k.plural + "/" + k.namespace + "/" + k.name
	}
	return resourcePrefix + k.plural + "/" + k.name
}
