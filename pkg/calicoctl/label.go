package calicoctl

import (
	"fmt"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

func init() {
	register(&command{name: "label", summary: "Add or update labels of resources.", run: (*cli).runLabel})
}

const labelUsage = `Usage:
  calicoctl label (<KIND> <NAME>
                  ( <key>=<value> [--overwrite] |
                    <key> --remove | <key>- )
                  [--config=<CONFIG>] [--namespace=<NS>])

Examples:
  # Label a workload endpoint
  calicoctl label workloadendpoints nginx --namespace=default app=web

  # Label a node and overwrite the original value of key 'cluster'
  calicoctl label nodes node1 cluster=frontend --overwrite

  # Remove label with key 'cluster' of the node
  calicoctl label nodes node1 cluster --remove
  calicoctl label nodes node1 cluster-

Options:
  -h --help                    Show this screen.
  -c --config=<CONFIG>         Path to the datastore configuration.
  -n --namespace=<NS>          Namespace of the resource.
                               Only applicable to NetworkPolicy, NetworkSet, and WorkloadEndpoint.
                               Uses the default namespace if not specified.
     --overwrite               If true, overwrite the value when the key is already
                               present in labels. Otherwise reports error when the
                               labeled resource already have the key in its labels.
                               Cannot be used with --remove.
     --remove                  If true, remove the specified key in labels of the
                               resource. Reports error when specified key does not
                               exist. Cannot be used with --overwrite.
`

// labelChange is what label does to one key.
type labelChange struct {
	key, value string
	remove     bool
	overwrite  bool
}

func (c *cli) runLabel(args []string) error {
	f := newFlags("label", labelUsage)
	var ns namespaceOptions
	var cfg string
	var ch labelChange
	ns.define(f, false)
	f.common(&cfg)
	f.boolean(&ch.overwrite, "overwrite")
	f.boolean(&ch.remove, "remove")
	pos, err := c.parseFlags(f, args)
	if err != nil {
		return err
	}
	if len(pos) != 3 || (ch.remove && ch.overwrite) {
		return failf("Invalid option: 'calicoctl label %s'. Use flag '--help' to read about a specific subcommand.", strings.Join(args, " "))
	}
	if err := ch.parse(pos[2]); err != nil {
		return err
	}
	k, ok := lookupKind(pos[0])
	if !ok {
		return fmt.Errorf("resource type '%s' is not supported", pos[0])
	}
	if pos[1] == "" {
		return fmt.Errorf("failed to get %s %s, error %v", pos[0], pos[1], errEmptyName)
	}
	m := api.ObjectMeta{Name: pos[1]}
	if err := ns.resolve(k, &m); err != nil {
		return err
	}
	s, err := c.connect(cfg)
	if err != nil {
		return err
	}
	defer s.close()
	return s.label(target{kind: k, namespace: m.Namespace, name: m.Name}, pos[0], ch)
}

// parse reads "key=value", "key" (with --remove) or "key-".
func (ch *labelChange) parse(arg string) error {
	switch {
	case ch.remove:
		ch.key = arg
	case strings.HasSuffix(arg, "-") && !strings.Contains(arg, "="):
		ch.key, ch.remove = strings.TrimSuffix(arg, "-"), true
	default:
		kv := strings.Split(arg, "=")
		if len(kv) != 2 {
			return fmt.Errorf("invalid label %s", arg)
		}
		ch.key, ch.value = kv[0], kv[1]
	}
	return nil
}

// label changes one label with a compare-and-swap, retrying if the object changed meanwhile.
func (s *session) label(t target, typed string, ch labelChange) error {
	for attempt := 1; ; attempt++ {
		obj, err := s.get(t)
		if err != nil {
			return fmt.Errorf("failed to get %s %s, error %v", typed, t.name, calicoError(err, t.kind, t.namespace, t.name))
		}
		done, err := ch.apply(obj.GetObjectMeta(), typed)
		if err != nil {
			return err
		}
		if err := datastore.ValidateWrite(obj); err != nil {
			return fmt.Errorf("failed to update %s %s, label not changed: %v", typed, t.name, err)
		}
		err = s.write(obj)
		if datastore.IsConflict(err) && attempt < maxUpdateAttempts {
			if err := s.backoff(attempt); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("failed to update %s %s, label not changed: %v", typed, t.name, calicoError(err, t.kind, t.namespace, t.name))
		}
		fmt.Fprintln(s.stdout, done)
		return nil
	}
}

// apply changes the labels and returns the success message.
func (ch labelChange) apply(m *api.ObjectMeta, typed string) (string, error) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	old, present := m.Labels[ch.key]
	switch {
	case ch.remove && !present:
		return "", fmt.Errorf("cannot remove label of %s %s, key %s does not exist", typed, m.Name, ch.key)
	case ch.remove:
		delete(m.Labels, ch.key)
		return fmt.Sprintf("Successfully removed label %s from %s %s", ch.key, typed, m.Name), nil
	case present && !ch.overwrite && old != ch.value:
		return "", failf("failed to update label of %s %s, key %s is already present. please use '--overwrite' to set a new value", typed, m.Name, ch.key)
	}
	m.Labels[ch.key] = ch.value
	if present {
		return fmt.Sprintf("Successfully updated label %s on %s %s", ch.key, typed, m.Name), nil
	}
	return fmt.Sprintf("Successfully set label %s on %s %s", ch.key, typed, m.Name), nil
}
