package diags

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// collectDatastore records this host's Node and its workload and host endpoints, as stored.
func collectDatastore(ctx context.Context, h *Host) ([]File, error) {
	if h.Datastore == nil {
		return nil, fmt.Errorf("no datastore connection: %w", h.DatastoreErr)
	}
	if h.NodeName == "" {
		return nil, fmt.Errorf("this host's node name is not known")
	}
	var files []File
	var errs []error
	node, err := datastore.GetAs[*api.Node](ctx, h.Datastore, "", h.NodeName)
	switch {
	case datastore.IsNotFound(err):
		files = append(files, File{Name: "datastore/node.json", Data: fmt.Appendf(nil, "{\"note\": \"no Node %q in the datastore\"}\n", h.NodeName)})
	case err != nil:
		errs = append(errs, fmt.Errorf("reading Node %s: %w", h.NodeName, err))
	default:
		files = append(files, jsonFile("datastore/node.json", node))
	}
	weps, _, err := datastore.ListAs[*api.WorkloadEndpoint](ctx, h.Datastore, "")
	if err != nil {
		errs = append(errs, fmt.Errorf("listing workload endpoints: %w", err))
	} else {
		files = append(files, jsonFile("datastore/workloadendpoints.json", onNode(weps, h.NodeName, func(w *api.WorkloadEndpoint) string { return w.Spec.Node })))
	}
	heps, _, err := datastore.ListAs[*api.HostEndpoint](ctx, h.Datastore, "")
	if err != nil {
		errs = append(errs, fmt.Errorf("listing host endpoints: %w", err))
	} else {
		files = append(files, jsonFile("datastore/hostendpoints.json", onNode(heps, h.NodeName, func(e *api.HostEndpoint) string { return e.Spec.Node })))
	}
	return files, joinErrs(errs)
}

// onNode keeps the objects of one node.
func onNode[T any](items []T, node string, nodeOf func(T) string) []T {
	out := []T{}
	for _, it := range items {
		if nodeOf(it) == node {
			out = append(out, it)
		}
	}
	return out
}

// jsonFile renders v as indented JSON with every secret-named value redacted.
func jsonFile(name string, v any) File {
	data, err := json.Marshal(v)
	if err != nil {
		return File{Name: name, Data: fmt.Appendf(nil, "encoding: %v\n", err)}
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		return File{Name: name, Data: fmt.Appendf(nil, "encoding: %v\n", err)}
	}
	out, err := json.MarshalIndent(RedactValue(generic), "", "  ")
	if err != nil {
		return File{Name: name, Data: fmt.Appendf(nil, "encoding: %v\n", err)}
	}
	return File{Name: name, Data: append(out, '\n')}
}
