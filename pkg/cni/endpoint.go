package cni

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/rs/zerolog"

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
			Endpoint:      string(w.Endpoint),
			InterfaceName: string(w.HostVeth),
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
	if err := datastore.ValidateWrite(wep); err != nil {
		return cniErr(CodeEndpoint, fmt.Sprintf("WorkloadEndpoint %s/%s would be invalid", wep.Namespace, wep.Name), err)
	}
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

// endpointDeleteAttempts bounds the compare-and-swap deletes of an endpoint that keeps changing.
const endpointDeleteAttempts = 5

// deleteOwnEndpoint deletes the workload's endpoint when it is this container's. An endpoint that
// names another container ID (Kubernetes: a newer sandbox of the same pod, the endpoint name being
// per pod) is left alone, as Project Calico's plugin does. The delete is a compare-and-swap on the
// revision read, so an endpoint rewritten meanwhile is read again.
func deleteOwnEndpoint(ctx context.Context, ds *datastore.Client, w Workload, log zerolog.Logger) error {
	k, _ := api.LookupKind("WorkloadEndpoint")
	for attempt := 1; ; attempt++ {
		wep, err := getEndpoint(ctx, ds, w)
		if err != nil || wep == nil {
			return err
		}
		if wep.Spec.ContainerID != "" && wep.Spec.ContainerID != w.ContainerID {
			log.Warn().Str("endpoint", w.Name).Str("endpoint_container", wep.Spec.ContainerID).
				Msg("the WorkloadEndpoint belongs to another container of this workload: left alone")
			return nil
		}
		rev, _ := strconv.ParseInt(wep.ResourceVersion, 10, 64)
		_, err = ds.Delete(ctx, k, w.Namespace, w.Name, rev)
		switch {
		case err == nil, datastore.IsNotFound(err):
			return nil
		case datastore.IsConflict(err) && attempt < endpointDeleteAttempts:
			continue
		}
		return cniErr(CodeEndpoint, fmt.Sprintf("deleting WorkloadEndpoint %s/%s", w.Namespace, w.Name), err)
	}
}

// newProfile is the Profile of a network: egress allowed, ingress allowed from endpoints of the
// same network (from anywhere for Kubernetes), as Project Calico's plugin creates it.
func newProfile(network string, k8s bool) *api.Profile {
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
	return p
}

// validateObjects checks, with the datastore's own validation, the Profile and the
// WorkloadEndpoint this container would write, before any address is allocated.
func validateObjects(w Workload) error {
	if err := datastore.ValidateWrite(newProfile(w.Network, w.Orchestrator == OrchestratorK8s)); err != nil {
		return cniErr(types.ErrInvalidNetworkConfig, fmt.Sprintf(
			"network name %q (\"name\" of the network configuration) makes an invalid Profile", w.Network), err)
	}
	if err := datastore.ValidateWrite(newEndpoint(w, nil, "")); err != nil {
		return cniErr(types.ErrInvalidEnvironmentVariables, fmt.Sprintf(
			"the container's identity makes an invalid WorkloadEndpoint %s/%s", w.Namespace, w.Name), err)
	}
	return nil
}

// ensureProfile creates the network's Profile when it is missing (never updates it).
func ensureProfile(ctx context.Context, ds *datastore.Client, network string, k8s bool) error {
	_, err := datastore.GetAs[*api.Profile](ctx, ds, "", network)
	if err == nil {
		return nil
	}
	if !datastore.IsNotFound(err) {
		return cniErr(CodeEndpoint, "reading Profile "+network, err)
	}
	p := newProfile(network, k8s)
	if err := datastore.ValidateWrite(p); err != nil {
		return cniErr(types.ErrInvalidNetworkConfig, "Profile "+network+" would be invalid", err)
	}
	if _, err := ds.Create(ctx, p); err != nil && !datastore.IsAlreadyExists(err) {
		return cniErr(CodeEndpoint, "creating Profile "+network, err)
	}
	return nil
}

// endpointMatches reports whether a stored endpoint describes this interface and addresses.
func endpointMatches(wep *api.WorkloadEndpoint, w Workload, ips []netip.Prefix) error {
	if wep.Spec.InterfaceName != string(w.HostVeth) || wep.Spec.ContainerID != w.ContainerID || wep.Spec.Node != w.Node {
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
