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

// startState is what every command reads first, in one etcd request: whether the datastore is
// ready, the container's WorkloadEndpoint and whether the network's Profile exists.
type startState struct {
	endpoint *api.WorkloadEndpoint // nil when it does not exist
	profile  bool
}

// readStart reads the startState. It requires ClusterInformation "default" with datastoreReady
// true, as Project Calico's plugin does before ADD and DEL.
func readStart(ctx context.Context, ds *datastore.Client, w Workload) (*startState, error) {
	keys := []string{resourceKey("ClusterInformation", "", "default"), resourceKey("WorkloadEndpoint", w.Namespace, w.Name),
		resourceKey("Profile", "", w.Network)}
	kvs, err := ds.GetKVs(ctx, keys...)
	if err != nil {
		return nil, cniErr(types.ErrTryAgainLater, "etcd is unreachable", err)
	}
	if err := datastoreReady(kvs[0]); err != nil {
		return nil, err
	}
	st := &startState{profile: kvs[2] != nil}
	if kvs[1] != nil {
		r, err := datastore.DecodeResource(kvs[1].Key, kvs[1].Value, kvs[1].ModRevision)
		if err != nil {
			return nil, cniErr(CodeEndpoint, "reading the WorkloadEndpoint", fmt.Errorf("%s: %w", kvs[1].Key, err))
		}
		st.endpoint = r.(*api.WorkloadEndpoint)
	}
	return st, nil
}

// resourceKey is the etcd key of a resource of a kind the api package registers.
func resourceKey(kind, namespace, name string) string {
	k, _ := api.LookupKind(kind)
	return datastore.ResourceKey(k, namespace, name)
}

// datastoreReady checks the stored ClusterInformation "default" (nil: missing).
func datastoreReady(kv *datastore.KV) error {
	if kv == nil {
		return cniErrf(CodeDatastore, "ClusterInformation \"default\" does not exist: the datastore is not initialised (run calico-startup)")
	}
	r, err := datastore.DecodeResource(kv.Key, kv.Value, kv.ModRevision)
	if err != nil {
		return cniErr(CodeDatastore, "ClusterInformation \"default\" cannot be read", fmt.Errorf("%s: %w", kv.Key, err))
	}
	if ready := r.(*api.ClusterInformation).Spec.DatastoreReady; ready == nil || !*ready {
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

// deleteOwnEndpoint deletes the workload's endpoint (wep, as read; nil: none) when it is this
// container's. An endpoint that names another container ID (Kubernetes: a newer sandbox of the
// same pod, the endpoint name being per pod) is left alone, as Project Calico's plugin does. The
// delete is a compare-and-swap on the revision read, so an endpoint rewritten meanwhile is read
// again.
func deleteOwnEndpoint(ctx context.Context, ds *datastore.Client, w Workload, wep *api.WorkloadEndpoint, log zerolog.Logger) error {
	key := resourceKey("WorkloadEndpoint", w.Namespace, w.Name)
	for attempt := 1; ; attempt++ {
		if wep == nil {
			return nil
		}
		if wep.Spec.ContainerID != "" && wep.Spec.ContainerID != w.ContainerID {
			log.Warn().Str("endpoint", w.Name).Str("endpoint_container", wep.Spec.ContainerID).
				Msg("the WorkloadEndpoint belongs to another container of this workload: left alone")
			return nil
		}
		rev, _ := strconv.ParseInt(wep.ResourceVersion, 10, 64)
		err := ds.DeleteKV(ctx, key, rev)
		switch {
		case err == nil, datastore.IsNotFound(err):
			return nil
		case !datastore.IsConflict(err) || attempt >= endpointDeleteAttempts:
			return cniErr(CodeEndpoint, fmt.Sprintf("deleting WorkloadEndpoint %s/%s", w.Namespace, w.Name), err)
		}
		if wep, err = getEndpoint(ctx, ds, w); err != nil {
			return err
		}
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

// ensureProfile creates the network's Profile when it is missing (exists: it was there when the
// command started; never updated).
func ensureProfile(ctx context.Context, ds *datastore.Client, network string, k8s, exists bool) error {
	if exists {
		return nil
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
