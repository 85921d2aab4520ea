package topo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// How networking-calico writes etcd (NC/etcdv3.py, datamodel_v3.py): whole v3 objects as JSON,
// every write a transaction (create-only, or under the mod_revision the object was read at),
// retried a few times when the comparison fails.

const v3Prefix = "/calico/resources/v3/projectcalico.org/"

// V3Key is /calico/resources/v3/projectcalico.org/<plural>/[<ns>/]<name>.
func V3Key(plural, ns, name string) string {
	if ns == "" {
		return v3Prefix + plural + "/" + name
	}
	return v3Prefix + plural + "/" + ns + "/" + name
}

// errCASFailed is a transaction whose comparison failed (someone else wrote the key meanwhile).
var errCASFailed = errors.New("compare-and-swap failed")

// v3Object is what the driver writes for one resource.
type v3Object struct {
	kind, plural, ns, name string
	labels, annotations    map[string]string
	spec                   map[string]any
	// merge, if set, builds the spec from the stored one (nil: none) instead of spec, keeping
	// the stored labels.
	merge func(spec map[string]any)
}

// writeV3 creates or rewrites a v3 object (datamodel_v3.put): a rewrite keeps uid and
// creationTimestamp and replaces labels and annotations. A failed comparison is retried up to
// 5 times with a fresh read (DRV/syncer.py).
func (f *Fabric) writeV3(ctx context.Context, o v3Object) error {
	ds, err := f.Datastore()
	if err != nil {
		return err
	}
	key := V3Key(o.plural, o.ns, o.name)
	for range 5 {
		if err = putV3(ctx, ds.Etcd(), key, o); !errors.Is(err, errCASFailed) {
			return err
		}
	}
	return err
}

func putV3(ctx context.Context, cli *clientv3.Client, key string, o v3Object) error {
	resp, err := cli.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("reading %s: %w", key, err)
	}
	uid, created := uuid.NewString(), time.Now().UTC().Format("2006-01-02T15:04:05Z")
	cmp := clientv3.Compare(clientv3.Version(key), "=", 0)
	if len(resp.Kvs) > 0 {
		var old struct {
			Metadata struct {
				UID               string            `json:"uid"`
				CreationTimestamp string            `json:"creationTimestamp"`
				Labels            map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec map[string]any `json:"spec"`
		}
		if json.Unmarshal(resp.Kvs[0].Value, &old) == nil && old.Metadata.UID != "" {
			uid, created = old.Metadata.UID, old.Metadata.CreationTimestamp
		}
		if o.merge != nil {
			o.spec, o.labels = old.Spec, old.Metadata.Labels
		}
		cmp = clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)
	}
	if o.merge != nil {
		if o.spec == nil {
			o.spec = map[string]any{}
		}
		o.merge(o.spec)
	}
	meta := map[string]any{"name": o.name, "uid": uid, "creationTimestamp": created}
	if o.ns != "" {
		meta["namespace"] = o.ns
	}
	if o.labels != nil {
		meta["labels"] = o.labels
	}
	if o.annotations != nil {
		meta["annotations"] = o.annotations
	}
	data, err := json.Marshal(map[string]any{"kind": o.kind, "apiVersion": "projectcalico.org/v3", "metadata": meta, "spec": o.spec})
	if err != nil {
		return err
	}
	txn, err := cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(key, string(data))).Commit()
	if err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	if !txn.Succeeded {
		return fmt.Errorf("writing %s: %w", key, errCASFailed)
	}
	return nil
}

// deleteV3 deletes a v3 object under the mod_revision it was read at (a stale resource found by
// a resync, or a port or security group deleted in Neutron). A missing key is not an error.
func (f *Fabric) deleteV3(ctx context.Context, plural, ns, name string) error {
	ds, err := f.Datastore()
	if err != nil {
		return err
	}
	key := V3Key(plural, ns, name)
	for range 5 {
		resp, err := ds.Etcd().Get(ctx, key)
		if err != nil {
			return fmt.Errorf("reading %s: %w", key, err)
		}
		if len(resp.Kvs) == 0 {
			return nil
		}
		txn, err := ds.Etcd().Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)).
			Then(clientv3.OpDelete(key)).Commit()
		if err != nil {
			return fmt.Errorf("deleting %s: %w", key, err)
		}
		if txn.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("deleting %s: %w", key, errCASFailed)
}

// WriteEndpoint writes (or rewrites) the VM's WorkloadEndpoint exactly as networking-calico's
// endpoint_spec, endpoint_labels and endpoint_annotations build it (endpoints.py:1127-1242).
func (vm *VM) WriteEndpoint(ctx context.Context) error {
	return vm.Host.f.writeV3(ctx, v3Object{kind: "WorkloadEndpoint", plural: "workloadendpoints", ns: vm.Namespace,
		name: vm.WEPName, labels: vm.endpointLabels(), annotations: vm.endpointAnnotations(), spec: vm.endpointSpec()})
}

// DeleteEndpoint deletes the WorkloadEndpoint (port unbound or deleted).
func (vm *VM) DeleteEndpoint(ctx context.Context) error {
	return vm.Host.f.deleteV3(ctx, "workloadendpoints", vm.Namespace, vm.WEPName)
}

func (vm *VM) endpointLabels() map[string]string {
	labels := map[string]string{
		"projectcalico.org/namespace":                   vm.Namespace,
		"projectcalico.org/orchestrator":                "openstack",
		"projectcalico.org/openstack-project-id":        "d1c5d8ea8b5b4a5f9f6e0b1d2c3a4b5c",
		"projectcalico.org/openstack-project-name":      "demo",
		"projectcalico.org/openstack-project-parent-id": "default",
		"projectcalico.org/openstack-network-name":      "demo-net",
	}
	for id, name := range vm.Port.SecurityGroups {
		labels["sg.projectcalico.org/openstack-"+id] = name
		if name != "" {
			if len(name) > 27 {
				name = name[:27]
			}
			labels["sg-name.projectcalico.org/openstack-"+name] = id
		}
	}
	return labels
}

func (vm *VM) endpointAnnotations() map[string]string {
	a := map[string]string{"openstack.projectcalico.org/network-id": VMNetworkID}
	if vm.Port.FQDN != "" {
		a["openstack.projectcalico.org/fqdn"] = vm.Port.FQDN
	}
	return a
}

func (vm *VM) endpointSpec() map[string]any {
	nets, aaps := []string{}, []string{}
	var gw4, gw6 bool
	for _, a := range vm.Port.FixedIPs {
		nets = append(nets, netip.PrefixFrom(a, a.BitLen()).String())
		gw4, gw6 = gw4 || a.Is4(), gw6 || a.Is6()
	}
	for _, a := range vm.Port.AllowedAddressPairs {
		p := netip.PrefixFrom(a, a.BitLen()).String()
		nets, aaps = append(nets, p), append(aaps, p)
	}
	spec := map[string]any{
		"orchestrator": "openstack", "workload": vm.Name, "node": vm.Host.Name, "endpoint": vm.PortID,
		"interfaceName": vm.Tap, "mac": vm.MAC, "ipNetworks": nets, "allowedIps": aaps,
	}
	if gw4 {
		spec["ipv4Gateway"] = VMGateway.String()
	}
	if gw6 {
		spec["ipv6Gateway"] = VMGateway6.String()
	}
	if len(vm.Port.FloatingIPs) > 0 {
		var nats []map[string]string
		for _, f := range vm.Port.FloatingIPs {
			nats = append(nats, map[string]string{"internalIP": f.Internal.String(), "externalIP": f.External.String()})
		}
		spec["ipNATs"] = nats
	}
	if len(vm.Port.QoS) > 0 {
		spec["qosControls"] = vm.Port.QoS
	}
	return spec
}

// ProvideOpenStackConfig merges into ClusterInformation and FelixConfiguration "default" what
// networking-calico's provide_felix_config does on every full resync (scope.py): a cluster GUID,
// "openstack" in clusterType, datastoreReady if absent, endpointReportingEnabled and "tap" in
// interfacePrefix. Other fields are left alone; each object is rewritten under CAS.
func (f *Fabric) ProvideOpenStackConfig(ctx context.Context) error {
	err := f.mergeSpec(ctx, "ClusterInformation", "clusterinformations", func(spec map[string]any) {
		if s, _ := spec["clusterGUID"].(string); s == "" {
			spec["clusterGUID"] = strings.ReplaceAll(uuid.NewString(), "-", "")
		}
		if t, _ := spec["clusterType"].(string); t == "" {
			spec["clusterType"] = "openstack"
		} else if !strings.Contains(t, "openstack") {
			spec["clusterType"] = t + ",openstack"
		}
		if _, ok := spec["datastoreReady"]; !ok {
			spec["datastoreReady"] = true
		}
	})
	if err != nil {
		return err
	}
	return f.mergeSpec(ctx, "FelixConfiguration", "felixconfigurations", func(spec map[string]any) {
		spec["endpointReportingEnabled"] = true
		prefix, _ := spec["interfacePrefix"].(string)
		var prefixes []string
		if prefix != "" {
			prefixes = strings.Split(prefix, ",")
		}
		for _, p := range prefixes {
			if p == "tap" {
				return
			}
		}
		spec["interfacePrefix"] = strings.Join(append(prefixes, "tap"), ",")
	})
}

// mergeSpec rewrites the global object "default" with merge applied to its spec.
func (f *Fabric) mergeSpec(ctx context.Context, kind, plural string, merge func(map[string]any)) error {
	return f.writeV3(ctx, v3Object{kind: kind, plural: plural, name: "default", merge: merge})
}
