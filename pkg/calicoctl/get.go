package calicoctl

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

func init() {
	register(&command{name: "get", summary: "Get a resource identified by file, directory, stdin or resource type and\n                 name.", run: (*cli).runGet})
}

const getUsage = `Usage:
  calicoctl get ( (<KIND> [<NAME>...]) |
                --filename=<FILENAME> [--recursive] [--skip-empty] )
                [--output=<OUTPUT>] [--config=<CONFIG>] [--namespace=<NS>] [--all-namespaces] [--export]

Examples:
  # List all policy in default output format.
  calicoctl get policy

  # List specific policies in YAML format
  calicoctl get -o yaml policy my-policy-1 my-policy-2

Options:
  -h --help                    Show this screen.
  -f --filename=<FILENAME>     Filename to use to get the resource.  If set to
                               "-" loads from stdin. If filename is a directory, this command is
                               invoked for each .json .yaml and .yml file within that directory.
  -R --recursive               Process the filename specified in -f or --filename recursively.
     --skip-empty              Do not error if any files or directory specified using -f or --filename contain no
                               data.
  -o --output=<OUTPUT FORMAT>  Output format.  One of: yaml, json, ps, wide, name,
                               custom-columns=..., go-template=<TEMPLATE>,
                               go-template-file=<FILE>   [Default: ps]
                               A template gets what Project Calico's calicoctl gives
                               it: a list holding, per thing got, the object or the
                               kind's list ({{range .}}{{range .Items}}...{{end}}{{end}}),
                               with Go field names (.ObjectMeta.Name, .Spec.CIDR).
  -c --config=<CONFIG>         Path to the datastore configuration.
  -n --namespace=<NS>          Namespace of the resource.
                               Only applicable to NetworkPolicy, NetworkSet, and WorkloadEndpoint.
                               Uses the default namespace if not specified.
  -A --all-namespaces          If present, list the requested object(s) across all namespaces.
     --export                  If present, returns the requested object(s) stripped of
                               cluster-specific information. This flag will be ignored
                               if <NAME> is not specified.

Description:
  Attempting to get resources that do not exist will simply return no results. Values in the
  datastore that cannot be decoded are skipped with a warning on stderr naming their key.
`

// target is one thing to get: a named object, or (name "") a listing of a kind. refusal, when
// set, is why it cannot be got (reported after what could be, as Project Calico does).
type target struct {
	kind      api.KindInfo
	namespace string
	name      string
	refusal   error
}

// printer prints the results of `get`.
type printer func(s *session, rs []result) error

func (c *cli) runGet(args []string) error {
	f := newFlags("get", getUsage)
	var in inputOptions
	var ns namespaceOptions
	var cfg, output string
	var export bool
	in.define(f)
	ns.define(f, true)
	f.common(&cfg)
	f.str(&output, "ps", "o", "output")
	f.boolean(&export, "export")
	pos, err := c.parseFlags(f, args)
	if err != nil {
		return err
	}
	print, err := newPrinter(output, ns.all || ns.namespace != "")
	if err != nil {
		return err
	}
	targets, err := c.getTargets(pos, in, ns)
	var fe fileError
	if errors.As(err, &fe) {
		return err
	}
	if err != nil {
		return fmt.Errorf("failed to get resources: %w", err)
	}
	s, err := c.connect(cfg)
	if err != nil {
		return err
	}
	defer s.close()
	rs, errs := s.fetch(targets, export)
	if err := print(s, rs); err != nil {
		return err
	}
	return errors.Join(errs...)
}

func newPrinter(output string, printNamespace bool) (printer, error) {
	table := func(headings []string, wide bool) printer {
		return func(s *session, rs []result) error {
			return printTable(s.stdout, rs, headings, wide, printNamespace, &tableContext{s: s})
		}
	}
	switch output {
	case "yaml", "yml":
		return func(s *session, rs []result) error { return printYAML(s.stdout, rs) }, nil
	case "json":
		return func(s *session, rs []result) error { return printJSON(s.stdout, rs) }, nil
	case "name":
		return func(s *session, rs []result) error { return printNames(s.stdout, rs, printNamespace) }, nil
	case "ps":
		return table(nil, false), nil
	case "wide":
		return table(nil, true), nil
	}
	key, value, _ := strings.Cut(output, "=")
	switch key {
	case "go-template":
		if value == "" {
			return nil, fmt.Errorf("need to specify a template")
		}
		return func(s *session, rs []result) error { return printTemplate(s, s.stdout, value, rs) }, nil
	case "go-template-file":
		if value == "" {
			return nil, fmt.Errorf("need to specify a template file")
		}
		return func(s *session, rs []result) error { return printTemplateFile(s, s.stdout, value, rs) }, nil
	}
	if cols, ok := strings.CutPrefix(output, "custom-columns="); ok {
		if cols == "" {
			return nil, fmt.Errorf("need to specify at least one column")
		}
		return table(strings.Split(cols, ","), false), nil
	}
	return nil, fmt.Errorf("unrecognized output format '%s'", output)
}

// getTargets turns `KIND [NAME...]` or the documents of -f into what to get.
func (c *cli) getTargets(pos []string, in inputOptions, ns namespaceOptions) ([]target, error) {
	if in.filename != "" {
		if len(pos) > 0 {
			return nil, failf("Invalid option: 'calicoctl get': give either -f or <KIND> [<NAME>...]. Use flag '--help' to read about a specific subcommand.")
		}
		docs, err := c.readDocuments(in)
		if err != nil {
			return nil, err
		}
		return documentTargets(docs, ns)
	}
	if len(pos) == 0 {
		return nil, failf("Invalid option: 'calicoctl get'. Use flag '--help' to read about a specific subcommand.")
	}
	k, ok := lookupKind(pos[0])
	if !ok {
		return nil, fmt.Errorf("resource type '%s' is not supported", pos[0])
	}
	names := pos[1:]
	if slices.Contains(names, "") {
		return nil, errEmptyName
	}
	if len(names) == 0 {
		names = []string{""}
	}
	var out []target
	for _, name := range names {
		m := api.ObjectMeta{Name: name}
		t := target{kind: k, name: name, refusal: ns.resolve(k, &m)}
		t.namespace = m.Namespace
		if t.refusal == nil && name != "" && k.Namespaced && m.Namespace == "" {
			t.refusal = fmt.Errorf("cannot use --all-namespace flag for getting a single resource")
		}
		out = append(out, t)
	}
	return out, nil
}

// documentTargets names the objects of documents (with calicoctl's defaults applied).
func documentTargets(docs []*document, ns namespaceOptions) ([]target, error) {
	var out []target
	for _, d := range docs {
		m := d.meta()
		if m.Name == "" {
			return nil, errEmptyName
		}
		t := target{kind: d.kind, name: m.Name, refusal: ns.resolve(d.kind, m)}
		api.SetDefaults(d.res)
		t.namespace = m.Namespace
		out = append(out, t)
	}
	return out, nil
}

// fetch reads every target. Missing objects are errors; undecodable values in a listing are
// reported on stderr and skipped, as Project Calico skips them.
func (s *session) fetch(targets []target, export bool) ([]result, []error) {
	var rs []result
	var errs []error
	for _, t := range targets {
		if t.refusal != nil {
			errs = append(errs, t.refusal)
			continue
		}
		r, err := s.fetchOne(t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if export && r.object != nil {
			stripForExport(r.object.GetObjectMeta())
		}
		rs = append(rs, r)
	}
	return rs, errs
}

func (s *session) fetchOne(t target) (result, error) {
	ctx, cancel := s.op()
	defer cancel()
	if t.name != "" {
		obj, err := s.get(t)
		if err != nil {
			return result{}, calicoError(err, t.kind, t.namespace, t.name)
		}
		return result{kind: t.kind, object: obj}, nil
	}
	list, err := s.ds.List(ctx, t.kind, t.namespace)
	if err != nil {
		return result{}, fmt.Errorf("listing %s: %w", t.kind.Kind, err)
	}
	for _, bad := range list.Invalid {
		fmt.Fprintf(s.stderr, "Warning: skipping %s: %v\n", bad.Key, bad.Err)
	}
	if t.kind.Kind == "Tier" {
		sortTiers(list.Items)
	}
	return result{kind: t.kind, items: withBuiltin(t.kind, list.Items), revision: list.Revision}, nil
}

// get reads one object; the built-in profile is never read from etcd.
func (s *session) get(t target) (api.Resource, error) {
	if isBuiltin(t.kind, t.name) {
		return api.DefaultAllowProfile(), nil
	}
	ctx, cancel := s.op()
	defer cancel()
	return s.ds.Get(ctx, t.kind, t.namespace, t.name)
}

// sortTiers orders tiers by their order, tiers without one last, as Project Calico lists them.
func sortTiers(items []api.Resource) {
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i].(*api.Tier).Spec.Order, items[j].(*api.Tier).Spec.Order
		switch {
		case a == nil:
			return false
		case b == nil:
			return true
		}
		return *a < *b
	})
}

func stripForExport(m *api.ObjectMeta) {
	m.Namespace, m.UID, m.ResourceVersion, m.CreationTimestamp = "", "", "", ""
}
