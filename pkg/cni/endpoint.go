package cni

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// checkDatastoreReady requires ClusterInformation "default" with datastoreReady true, as Project
// Calico's plugin does before ADD and DEL.
func checkDatastoreReady(ctx context.Context, ds *datastore.Client) error {
	ci, err := datastore.GetAs[*api.ClusterInformation](ctx, ds, "", "default")
	if datastore.IsNotFound(err) {
		return cniErrf(CodeDatastore, "ClusterInformation \"default\" does not exist: the datastore is not initialised (run calico-startup)")
	}
	if err != nil {
		return cniErr(types.ErrTryAgainLater, "etcd is unreachable", err)
	}
	if ci.Spec.DatastoreReady == nil || !*ci.Spec.DatastoreReady {
		return cniErrf(types.ErrTryAgainLater, "the datastore is not ready (ClusterInformation datastoreReady is not true)")
	}
	return nil
}

// getEndpoint reads the workload's endpoint (nil when it does not exist).
func getEndpoint(ctx context.Context, ds *datastore.Client, w Workload) (*api.WorkloadEndpoint, error) {
	wep, err := datastore.GetAs[*api.WorkloadEndpoint](ctx, ds, w.Namespace, w.Name)
	if datastore.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, cniErr(CodeEndpoint, "reading the WorkloadEndpoint", err)
	}
	return wep, nil
}

// newEndpoint builds the WorkloadEndpoint Project Calico's plugin writes.
func newEndpoint(w Workload, ips []netip.Prefix, mac string) *api.WorkloadEndpoint {
	wep := &api.WorkloadEndpoint{
		ObjectMeta: api.ObjectMeta{Name: w.Name, Namespace: w.Namespace},
		Spec: api.WorkloadEndpointSpec{
			Orchestrator:  w.Orchestrator,
			Node:          w.Node,
			ContainerID:   w.ContainerID,
			Pod:           w.Pod,
			Endpoint:      w.Endpoint,
			InterfaceName: w.HostVeth,
			MAC:           mac,
			Profiles:      []string{w.Network},
		},
	}
	for _, p := range ips {
		wep.Spec.IPNetworks = append(wep.Spec.IPNetworks, p.String())
	}
	api.SetDefaults(wep)
	return wep
}

// writeEndpoint creates the endpoint, or replaces a stale one (keeping its uid).
func writeEndpoint(ctx context.Context, ds *datastore.Client, wep *api.WorkloadEndpoint, existing *api.WorkloadEndpoint) error {
	var err error
	if existing != nil {
		wep.ResourceVersion = existing.ResourceVersion
		_, err = ds.Update(ctx, wep)
	} else {
		_, err = ds.Create(ctx, wep)
	}
	if err != nil {
		return cniErr(CodeEndpoint, fmt.Sprintf("writing WorkloadEndpoint %s/%s", wep.Namespace, wep.Name), err)
	}
	return nil
}

// deleteEndpoint deletes the workload's endpoint; a missing one is fine.
func deleteEndpoint(ctx context.Context, ds *datastore.Client, w Workload) error {
	k, _ := api.LookupKind("WorkloadEndpoint")
	_, err := ds.Delete(ctx, k, w.Namespace, w.Name, 0)
	if err != nil && !datastore.IsNotFound(err) {
		return cniErr(CodeEndpoint, fmt.Sprintf("deleting WorkloadEndpoint %s/%s", w.Namespace, w.Name), err)
	}
	return nil
}

// ensureProfile creates the network's Profile when it is missing (never updates it): egress
// allowed, ingress allowed from endpoints of the same network (from anywhere for Kubernetes).
func ensureProfile(ctx context.Context, ds *datastore.Client, network string, k8s bool) error {
	_, err := datastore.GetAs[*api.Profile](ctx, ds, "", network)
	if err == nil {
		return nil
	}
	if !datastore.IsNotFound(err) {
		return cniErr(CodeEndpoint, "reading Profile "+network, err)
	}
	ingress := api.Rule{Action: api.ActionAllow, Source: api.EntityRule{Selector: "has(" + network + ")"}}
	if k8s {
		ingress = api.Rule{Action: api.ActionAllow}
	}
	p := &api.Profile{
		ObjectMeta: api.ObjectMeta{Name: network},
		Spec: api.ProfileSpec{
			Egress:        []api.Rule{{Action: api.ActionAllow}},
			Ingress:       []api.Rule{ingress},
			LabelsToApply: map[string]string{network: ""},
		},
	}
	if _, err := ds.Create(ctx, p); err != nil && !datastore.IsAlreadyExists(err) {
		return cniErr(CodeEndpoint, "creating Profile "+network, err)
	}
	return nil
}

// endpointMatches reports whether a stored endpoint describes this interface and addresses.
func endpointMatches(wep *api.WorkloadEndpoint, w Workload, ips []netip.Prefix) error {
	if wep.Spec.InterfaceName != w.HostVeth || wep.Spec.ContainerID != w.ContainerID || wep.Spec.Node != w.Node {
		return fmt.Errorf("WorkloadEndpoint %s names interface %q, container %q, node %q", wep.Name,
			wep.Spec.InterfaceName, wep.Spec.ContainerID, wep.Spec.Node)
	}
	var want []string
	for _, p := range ips {
		want = append(want, p.String())
	}
	got := slices.Clone(wep.Spec.IPNetworks)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("WorkloadEndpoint %s has addresses %v, want %v", wep.Name, wep.Spec.IPNetworks, want)
	}
	return nil
}
