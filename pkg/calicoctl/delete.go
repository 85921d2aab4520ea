package calicoctl

import (
	"errors"
	"fmt"
	"slices"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

func init() {
	register(&command{name: "delete", summary: "Delete a resource identified by file, directory, stdin or resource type and\n                 name.", run: (*cli).runDelete})
}

const deleteUsage = `Usage:
  calicoctl delete ( (<KIND> [<NAME>...]) |
                   --filename=<FILE> [--recursive] [--skip-empty] )
                   [--skip-not-exists] [--config=<CONFIG>] [--namespace=<NS>]

Examples:
  # Delete a policy using the type and name specified in policy.yaml.
  calicoctl delete -f ./policy.yaml

  # Delete a policy based on the type and name in the YAML passed into stdin.
  cat policy.yaml | calicoctl delete -f -

  # Delete policies with names "foo" and "bar"
  calicoctl delete policy foo bar

Options:
  -h --help                    Show this screen.
  -s --skip-not-exists         Skip over and treat as successful, resources that
                               don't exist.
  -f --filename=<FILENAME>     Filename to use to delete the resource.  If set to
                               "-" loads from stdin.
  -R --recursive               Process the filename specified in -f or --filename recursively.
     --skip-empty              Do not error if any files or directory specified using -f or --filename contain no
                               data.
  -c --config=<CONFIG>         Path to the datastore configuration.
  -n --namespace=<NS>          Namespace of the resource.
                               Only applicable to NetworkPolicy, NetworkSet, and WorkloadEndpoint.
                               Uses the default namespace if not specified.

Description:
  A resourceVersion given in a file must still be current. Deleting a resource that does not
  exist is an error unless --skip-not-exists is set; skipped resources count as deleted.

  Deleting a Node cleans up what belongs to it first, as Project Calico does: the IP addresses
  of its WorkloadEndpoints and its tunnel addresses are released, its WorkloadEndpoints deleted,
  the node is removed from IPAM (empty blocks deleted, blocks still in use kept without
  affinity), and its BGPPeers, HostEndpoints, FelixConfiguration and BGPConfiguration
  node.<NAME> are deleted. What was cleaned up is printed. A Node that no longer exists still
  has its leftovers cleaned up.
`

// deletion is one object to delete; revision 0 deletes whatever is stored. refusal, when set,
// is why it is not deleted (reported in its turn, as Project Calico reports it).
type deletion struct {
	target
	revision int64
	refusal  error
}

func (c *cli) runDelete(args []string) error {
	f := newFlags("delete", deleteUsage)
	var in inputOptions
	var ns namespaceOptions
	var cfg string
	var skipNotExists bool
	in.define(f)
	ns.define(f, false)
	f.common(&cfg)
	f.boolean(&skipNotExists, "s", "skip-not-exists")
	pos, err := c.parseFlags(f, args)
	if err != nil {
		return err
	}
	dels, kind, err := c.deletions(pos, in, ns)
	if err != nil || dels == nil {
		return err
	}
	s, err := c.connect(cfg)
	if err != nil {
		return err
	}
	defer s.close()
	o := &outcome{total: len(dels), kind: kind}
	for _, d := range dels {
		err := d.refusal
		if err == nil {
			err = s.deleteOne(d)
		}
		if skipNotExists && datastore.IsNotFound(err) {
			err = nil
		}
		if err != nil {
			o.errs = append(o.errs, calicoError(err, d.kind, d.namespace, d.name))
			continue
		}
		o.handled++
	}
	return o.reportDelete(s.stdout)
}

// deletions lists what to delete, from `KIND NAME...` or from documents. It returns nil (and
// prints why) when there is nothing to do.
func (c *cli) deletions(pos []string, in inputOptions, ns namespaceOptions) ([]deletion, string, error) {
	if in.filename == "" {
		return namedDeletions(pos, ns)
	}
	if len(pos) > 0 {
		return nil, "", failf("Invalid option: 'calicoctl delete': give either -f or <KIND> <NAME>.... Use flag '--help' to read about a specific subcommand.")
	}
	docs, err := c.readDocuments(in)
	if err != nil {
		return nil, "", err
	}
	if len(docs) == 0 {
		fmt.Fprintln(c.stdout, "No resources specified")
		return nil, "", nil
	}
	var out []deletion
	for _, d := range docs {
		m := d.meta()
		if m.Name == "" {
			return nil, "", errEmptyName
		}
		del := newDeletion(d.kind, m, ns)
		api.SetDefaults(d.res)
		del.revision = datastore.Revision(d.res)
		out = append(out, del)
	}
	return out, singleKind(docs), nil
}

// errEmptyName is Project Calico's refusal of an empty name, before anything is done.
var errEmptyName = errors.New("resource name may not be empty")

// namedDeletions lists the objects of `KIND NAME...`.
func namedDeletions(pos []string, ns namespaceOptions) ([]deletion, string, error) {
	if len(pos) < 2 {
		return nil, "", failf("Invalid option: 'calicoctl delete'. Use flag '--help' to read about a specific subcommand.")
	}
	k, ok := lookupKind(pos[0])
	if !ok {
		return nil, "", fmt.Errorf("resource type '%s' is not supported", pos[0])
	}
	if slices.Contains(pos[1:], "") {
		return nil, "", errEmptyName
	}
	var out []deletion
	for _, name := range pos[1:] {
		out = append(out, newDeletion(k, &api.ObjectMeta{Name: name}, ns))
	}
	return out, k.Kind, nil
}

// newDeletion resolves the object's namespace and says why it may not be deleted, if so.
func newDeletion(k api.KindInfo, m *api.ObjectMeta, ns namespaceOptions) deletion {
	d := deletion{target: target{kind: k, name: m.Name}}
	if k.Kind == "ClusterInformation" {
		d.refusal = errors.New(clusterInfoReadOnly(actDelete))
		return d
	}
	d.refusal = ns.resolve(k, m)
	d.namespace = m.Namespace
	if d.refusal == nil && isKubernetesPolicyName(k, m.Name) {
		d.refusal = kubernetesPolicyDelete(k, m.Namespace, m.Name)
	}
	return d
}

// deleteOne deletes one object; a Node takes what belongs to it along (see deleteNode).
func (s *session) deleteOne(d deletion) error {
	if d.kind.Kind == "Node" {
		return s.deleteNode(d)
	}
	return s.deleteResource(d.kind, d.namespace, d.name, d.revision)
}
