package calicoctl

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

func init() {
	register(&command{name: "patch", summary: "Patch a pre-existing resource in place.", run: (*cli).runPatch})
}

const patchUsage = `Usage:
  calicoctl patch <KIND> <NAME> --patch=<PATCH> [--type=<TYPE>] [--config=<CONFIG>] [--namespace=<NS>]

Examples:
  # Partially update a node.
  calicoctl patch node node-0 --patch '{"spec":{"bgp": {"routeReflectorClusterID": "224.0.0.1"}}}'

  # Set one label and remove another.
  calicoctl patch ippool pool-1 -p '{"metadata":{"labels":{"zone":"z1","old":null}}}'

  # Append a rule to a policy, if its first rule is still the one expected.
  calicoctl patch gnp p1 --type json -p '[{"op":"test","path":"/spec/ingress/0/action","value":"Deny"},
    {"op":"add","path":"/spec/ingress/-","value":{"action":"Allow","protocol":"TCP"}}]'

Options:
  -h --help                    Show this screen.
  -p --patch=<PATCH>           The patch, as JSON or YAML.
  -t --type=<TYPE>             Format of the patch:
                                  strategic   (default) applied as a merge patch: Calico
                                              resources carry no strategic merge keys
                                  merge       JSON Merge Patch, RFC 7386
                                  json        JSON Patch, RFC 6902: a list of operations
                                              (add, remove, replace, move, copy, test),
                                              applied all or nothing
  -c --config=<CONFIG>         Path to the datastore configuration.
  -n --namespace=<NS>          Namespace of the resource.
                               Only applicable to NetworkPolicy, NetworkSet, and WorkloadEndpoint.
                               Uses the default namespace if not specified.

Description:
  The patch command merges the patch into the stored resource (objects are merged key by key,
  null removes a key, anything else replaces the stored value). Only spec, metadata.labels and
  metadata.annotations may be patched. The result is defaulted and validated like apply's
  input and written with a compare-and-swap; if the resource changed meanwhile, the patch is
  applied again to the new version. Patching a resource that does not exist is an error.
`

// patchTarget is what a patch applies to: a merge patch, or the operations of a JSON patch.
type patchTarget struct {
	target
	patch map[string]any
	ops   []jsonPatchOp
}

func (c *cli) runPatch(args []string) error {
	f := newFlags("patch", patchUsage)
	var ns namespaceOptions
	var cfg, patch, typ string
	ns.define(f, false)
	f.common(&cfg)
	f.str(&patch, "", "p", "patch")
	f.str(&typ, "strategic", "t", "type")
	pos, err := c.parseFlags(f, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 || patch == "" {
		return failf("Invalid option: 'calicoctl patch %s'. Use flag '--help' to read about a specific subcommand.", strings.Join(args, " "))
	}
	pt, err := parsePatchTarget(pos[0], pos[1], patch, typ, ns)
	if err != nil {
		return fmt.Errorf("hit error: %w", err)
	}
	s, err := c.connect(cfg)
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.patch(pt); err != nil {
		return fmt.Errorf("hit error: %w", calicoError(err, pt.kind, pt.namespace, pt.name))
	}
	fmt.Fprintf(c.stdout, "Successfully patched 1 '%s' resource\n", pt.kind.Kind)
	return nil
}

// parsePatchTarget resolves the kind and namespace and parses and checks the patch.
func parsePatchTarget(kind, name, patch, typ string, ns namespaceOptions) (*patchTarget, error) {
	switch typ {
	case "merge", "strategic", "json":
	default:
		return nil, fmt.Errorf("unknown patch type %q (use strategic, merge or json)", typ)
	}
	k, ok := lookupKind(kind)
	if !ok {
		return nil, fmt.Errorf("resource type '%s' is not supported", kind)
	}
	if k.Kind == "ClusterInformation" {
		return nil, fmt.Errorf("%s", notSupported("patch", "ClusterInformation", "resource is readonly"))
	}
	m := api.ObjectMeta{Name: name}
	if err := ns.resolve(k, &m); err != nil {
		return nil, err
	}
	pt := &patchTarget{target: target{kind: k, namespace: m.Namespace, name: name}}
	var err error
	if typ == "json" {
		pt.ops, err = parseJSONPatch(patch)
	} else {
		pt.patch, err = parsePatch(patch)
	}
	if err != nil {
		return nil, err
	}
	return pt, nil
}

// parsePatch reads a JSON or YAML object and checks that it only touches what may be patched.
func parsePatch(text string) (map[string]any, error) {
	j, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("invalid patch: %v", err)
	}
	var p map[string]any
	if err := json.Unmarshal(j, &p); err != nil || p == nil {
		return nil, fmt.Errorf("invalid patch: it must be a JSON or YAML object")
	}
	if unknown := unknownTopLevelField(p); unknown != "" {
		return nil, fmt.Errorf("creating resource from patched data: %w", jsonDecodeError(fmt.Errorf("json: unknown field %q", unknown)))
	}
	if bad := disallowedPatchFields(p); len(bad) > 0 {
		return nil, fmt.Errorf("a patch may only change spec, metadata.labels and metadata.annotations, not %s", strings.Join(bad, ", "))
	}
	return p, nil
}

// unknownTopLevelField is the first (sorted) key of the patch that no resource has; Project
// Calico fails decoding the patched resource on it.
func unknownTopLevelField(p map[string]any) string {
	var unknown []string
	for k := range p {
		switch k {
		case "kind", "apiVersion", "metadata", "spec", "status":
		default:
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	if len(unknown) == 0 {
		return ""
	}
	return unknown[0]
}

// disallowedPatchFields lists the fields of the patch outside spec, metadata.labels and
// metadata.annotations.
func disallowedPatchFields(p map[string]any) []string {
	var bad []string
	for k, v := range p {
		switch k {
		case "spec":
		case "metadata":
			md, ok := v.(map[string]any)
			if !ok {
				bad = append(bad, "metadata")
				continue
			}
			for mk := range md {
				if mk != "labels" && mk != "annotations" {
					bad = append(bad, "metadata."+mk)
				}
			}
		default:
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	return bad
}

// patch merges the patch into the stored object, validates the result and writes it with a
// compare-and-swap against the version it was merged into; on a conflict it starts over from
// the new version.
func (s *session) patch(pt *patchTarget) error {
	for attempt := 1; ; attempt++ {
		d, err := s.patched(pt)
		if err != nil {
			return err
		}
		if err := s.checkPatched(d); err != nil {
			return err
		}
		if s.beforePatchWrite != nil {
			s.beforePatchWrite()
		}
		err = s.write(d.res)
		if !datastore.IsConflict(err) || attempt == maxUpdateAttempts {
			return err
		}
		if err := s.backoff(attempt); err != nil {
			return err
		}
	}
}

// patched reads the stored object and returns it with the patch merged in, as a document whose
// resourceVersion is the one it was read at.
func (s *session) patched(pt *patchTarget) (*document, error) {
	if isBuiltin(pt.kind, pt.name) {
		return nil, fmt.Errorf("updating existing resource: %v", errBuiltinUpdate)
	}
	ctx, cancel := s.op()
	defer cancel()
	key := datastore.ResourceKey(pt.kind, pt.namespace, pt.name)
	kv, err := s.ds.GetKV(ctx, key)
	if err != nil {
		return nil, err
	}
	stored, err := datastore.DecodeResource(key, kv.Value, kv.ModRevision)
	if err != nil {
		return nil, fmt.Errorf("the stored %s cannot be decoded: %v", identifier(pt.kind, pt.namespace, pt.name), err)
	}
	base, err := toMap(stored)
	if err != nil {
		return nil, err
	}
	result, err := pt.apply(base)
	if err != nil {
		return nil, err
	}
	merged, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	d, err := decodeResource(merged, 1)
	if err != nil {
		return nil, fmt.Errorf("creating resource from patched data: %w", err)
	}
	d.meta().ResourceVersion = strconv.FormatInt(kv.ModRevision, 10)
	return d, nil
}

// apply applies the patch to the stored object (decoded JSON).
func (pt *patchTarget) apply(base map[string]any) (any, error) {
	if pt.ops == nil {
		return mergePatch(base, pt.patch), nil
	}
	result, err := applyJSONPatch(deepCopyJSON(base), pt.ops)
	if err != nil {
		return nil, err
	}
	after, ok := result.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the patched resource is not an object")
	}
	if bad := changedOutsidePatchable(base, after); len(bad) > 0 {
		return nil, fmt.Errorf("a patch may only change spec, metadata.labels and metadata.annotations, not %s", strings.Join(bad, ", "))
	}
	return after, nil
}

func toMap(r api.Resource) (map[string]any, error) {
	raw, err := datastore.EncodeResource(r)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}

// mergePatch applies an RFC 7386 JSON merge patch to target: objects merge key by key, null
// deletes a key, any other value replaces what is there.
func mergePatch(target any, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// checkPatched defaults and validates the patched object as apply would (the datastore checks
// included); a refusal is worded as Project Calico's update of the patched resource fails.
func (s *session) checkPatched(d *document) error {
	err := checkContent(d, namespaceOptions{}, actReplace)
	if err == nil {
		cross, cerr := s.crossCheck([]*document{d}, actReplace)
		if cerr != nil {
			return cerr
		}
		if rs := crossRefusals([]*document{d}, cross); len(rs) > 0 {
			err = rs[0].err
		}
	}
	if err != nil {
		return fmt.Errorf("updating existing resource: %w", err)
	}
	return nil
}
