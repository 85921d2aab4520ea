package calicoctl

import (
	"errors"
	"fmt"
	"maps"
	"net"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// action is what a resource command does with each document.
type action int

const (
	actApply action = iota
	actCreate
	actReplace
	actDelete
	actValidate
)

// op is the action's name, as in messages and command names ("apply", ...).
func (a action) op() string {
	return [...]string{"apply", "create", "replace", "delete", "validate"}[a]
}

// namespaceOptions are -n/--namespace and -A/--all-namespaces.
type namespaceOptions struct {
	namespace string
	all       bool
}

func (o *namespaceOptions) define(f *flags, withAll bool) {
	f.str(&o.namespace, "", "n", "namespace")
	if withAll {
		// -a and its long name are Project Calico's hidden aliases of -A.
		f.boolean(&o.all, "A", "a", "all-namespaces", "all-namespaces-a")
	}
}

// resolveNamespace fills in or checks an object's namespace from the command line, as Project
// Calico's calicoctl does: namespaced kinds default to "default" unless -A lists every namespace;
// cluster-wide kinds take no namespace at all.
func (o namespaceOptions) resolve(k api.KindInfo, m *api.ObjectMeta) error {
	if !k.Namespaced {
		switch {
		case m.Namespace != "":
			return fmt.Errorf("namespace should not be specified for a non-namespaced resource. %s is not a namespaced resource", k.Kind)
		case o.all || o.namespace != "":
			return fmt.Errorf("%s is not namespaced", k.Kind)
		}
		return nil
	}
	switch {
	case o.all && o.namespace != "":
		return fmt.Errorf("cannot use both --namespace and --all-namespaces flags at the same time")
	case o.all:
		m.Namespace = ""
	case m.Namespace == "" && o.namespace != "":
		m.Namespace = o.namespace
	case m.Namespace == "" && o.namespace == "":
		m.Namespace = "default"
	case o.namespace != "" && m.Namespace != o.namespace:
		return fmt.Errorf("resource namespace does not match client namespace. %s != %s", m.Namespace, o.namespace)
	}
	return nil
}

// prepareWrites resolves namespaces, applies calicoctl's defaults and validates every document,
// then checks them against each other and the datastore: IP pools must not overlap enabled pools
// and may not change CIDR or block size, a policy's tier and a peer's filters must exist. It
// returns why each refused document is refused; the caller writes nothing unless there is none.
func (s *session) prepareWrites(docs []*document, ns namespaceOptions, act action) ([]rejection, error) {
	var rs []rejection
	for _, d := range docs {
		if err := checkDocument(d, ns, act); err != nil {
			rs = append(rs, rejection{d, err})
		}
	}
	if len(rs) > 0 {
		return rs, nil
	}
	cross, err := s.crossCheck(docs, act)
	if err != nil {
		return nil, err
	}
	return crossRefusals(docs, cross), nil
}

// checkDocument checks one document on its own and returns why it is refused, or nil.
func checkDocument(d *document, ns namespaceOptions, act action) error {
	if d.kind.Kind == "ClusterInformation" {
		return errors.New(clusterInfoReadOnly(act))
	}
	if isBuiltin(d.kind, d.meta().Name) {
		return nil // refused when written, as Project Calico refuses it before validating
	}
	if isKubernetesPolicy(d.res) {
		return ns.resolve(d.kind, d.meta()) // likewise
	}
	return checkContent(d, ns, act)
}

// checkContent resolves the document's namespace, fills in calicoctl's defaults and validates it.
func checkContent(d *document, ns namespaceOptions, act action) error {
	if err := ns.resolve(d.kind, d.meta()); err != nil {
		return err
	}
	if rv := d.meta().ResourceVersion; act == actCreate && rv != "" {
		return validationError{{Field: "metadata.resourceVersion", Name: "Metadata.ResourceVersion", Value: rv,
			Message: "field must not be set for a Create request"}}
	}
	api.SetDefaults(d.res)
	err := datastore.ValidateWrite(d.res)
	if err == nil {
		err = api.Unsupported(d.res) // valid, but calico-host could not enforce it as written
	}
	var ve *api.ValidationError
	if errors.As(err, &ve) {
		return validationError(ve.Errors)
	}
	return err
}

// clusterInfoReadOnly is Project Calico's refusal to write ClusterInformation, which calico/node
// (here: calico-startup) owns.
func clusterInfoReadOnly(act action) string {
	switch act {
	case actApply:
		return notSupported("apply", "ClusterInformation", "resource is readonly")
	case actCreate:
		return notSupported("create or apply", "ClusterInformation", "")
	case actDelete:
		return notSupported("delete", "ClusterInformation", "")
	}
	return notSupported("apply or replace", "ClusterInformation", "")
}

// crossProblem is a problem found by comparing a document with others or with the datastore:
// a field failure, or another error (a missing tier).
type crossProblem struct {
	doc   *document
	field api.FieldError
	err   error
}

// crossRefusals gathers the problems of each document into one refusal, in document order.
func crossRefusals(docs []*document, problems []crossProblem) []rejection {
	var rs []rejection
	for _, d := range docs {
		var fields validationError
		var other error
		for _, p := range problems {
			switch {
			case p.doc != d:
			case p.err != nil:
				other = p.err
			default:
				fields = append(fields, p.field)
			}
		}
		switch {
		case other != nil:
			rs = append(rs, rejection{d, other})
		case len(fields) > 0:
			rs = append(rs, rejection{d, fields})
		}
	}
	return rs
}

// crossCheck runs the checks that need the other documents and the datastore.
func (s *session) crossCheck(docs []*document, act action) ([]crossProblem, error) {
	pools, err := s.poolChecks(docs, act)
	if err != nil {
		return nil, err
	}
	tiers, err := s.tierChecks(docs)
	if err != nil {
		return nil, err
	}
	filters, err := s.filterChecks(docs)
	if err != nil {
		return nil, err
	}
	return append(append(pools, tiers...), filters...), nil
}

// filterChecks requires every BGPFilter a BGPPeer names to exist, in the datastore or in the
// input, as Project Calico's client does.
func (s *session) filterChecks(docs []*document) ([]crossProblem, error) {
	known := map[string]bool{}
	var peers []*document
	for _, d := range docs {
		switch o := d.res.(type) {
		case *api.BGPFilter:
			known[o.Name] = true
		case *api.BGPPeer:
			if len(o.Spec.Filters) > 0 {
				peers = append(peers, d)
			}
		}
	}
	if len(peers) == 0 {
		return nil, nil
	}
	ctx, cancel := s.op()
	defer cancel()
	stored, _, err := datastore.ListAs[*api.BGPFilter](ctx, s.ds, "")
	if err != nil {
		return nil, fmt.Errorf("listing BGP filters: %w", err)
	}
	for _, f := range stored {
		known[f.Name] = true
	}
	var out []crossProblem
	for _, d := range peers {
		var missing []string
		for _, f := range d.res.(*api.BGPPeer).Spec.Filters {
			if !known[f] {
				missing = append(missing, f)
			}
		}
		if len(missing) > 0 {
			out = append(out, crossProblem{doc: d, field: api.FieldError{Field: "spec.filters", Name: "BGPPeer.Spec.Filters",
				Value: fmt.Sprint(d.res.(*api.BGPPeer).Spec.Filters), Message: "BGPFilter(s) not found"}})
		}
	}
	return out, nil
}

// poolChecks checks every IPPool document against the stored pools overlaid with the pools of
// the input (see poolProblems).
func (s *session) poolChecks(docs []*document, act action) ([]crossProblem, error) {
	if len(poolDocuments(docs)) == 0 {
		return nil, nil
	}
	ctx, cancel := s.op()
	defer cancel()
	stored, _, err := datastore.ListAs[*api.IPPool](ctx, s.ds, "")
	if err != nil {
		return nil, fmt.Errorf("listing IP pools: %w", err)
	}
	return poolProblems(stored, docs, act), nil
}

func poolDocuments(docs []*document) []*document {
	var out []*document
	for _, d := range docs {
		if _, ok := d.res.(*api.IPPool); ok {
			out = append(out, d)
		}
	}
	return out
}

// poolProblems checks the IPPool documents against the stored pools overlaid with the pools of
// the input: enabled pools may not overlap, and an existing pool keeps its CIDR and block size.
func poolProblems(stored []*api.IPPool, docs []*document, act action) []crossProblem {
	mine := poolDocuments(docs)
	storedByName, all := poolView(stored, mine)
	var out []crossProblem
	for _, d := range mine {
		p := d.res.(*api.IPPool)
		var ve *api.ValidationError
		if errors.As(api.PoolOverlapError(p, all), &ve) {
			out = append(out, crossProblem{doc: d, field: ve.Errors[0]})
		}
		if old, ok := storedByName[p.Name]; ok && act != actCreate {
			out = append(out, immutablePoolFields(d, old, p)...)
		}
	}
	return out
}

// poolView overlays the input's pools on the stored ones (by name) and returns the stored pools
// by name and the combined list.
func poolView(stored []*api.IPPool, mine []*document) (map[string]*api.IPPool, []*api.IPPool) {
	byName := map[string]*api.IPPool{}
	var order []string
	for _, p := range stored {
		byName[p.Name] = p
		order = append(order, p.Name)
	}
	storedByName := maps.Clone(byName)
	for _, d := range mine {
		p := d.res.(*api.IPPool)
		if _, ok := byName[p.Name]; !ok {
			order = append(order, p.Name)
		}
		byName[p.Name] = p
	}
	all := make([]*api.IPPool, 0, len(order))
	for _, n := range order {
		all = append(all, byName[n])
	}
	return storedByName, all
}

// immutablePoolFields reports changes Project Calico refuses on an existing pool.
func immutablePoolFields(d *document, old, p *api.IPPool) []crossProblem {
	var out []crossProblem
	if normalCIDR(old.Spec.CIDR) != normalCIDR(p.Spec.CIDR) {
		out = append(out, crossProblem{doc: d, field: api.FieldError{Field: "spec.cidr", Name: "IPPool.Spec.CIDR",
			Value: p.Spec.CIDR, Message: "IPPool CIDR cannot be modified"}})
	}
	if old.Spec.BlockSize != 0 && old.Spec.BlockSize != p.Spec.BlockSize {
		out = append(out, crossProblem{doc: d, field: api.FieldError{Field: "spec.blockSize", Name: "IPPool.Spec.BlockSize",
			Value: p.Spec.BlockSize, Message: "IPPool BlockSize cannot be modified"}})
	}
	return out
}

func normalCIDR(s string) string {
	if _, n, err := net.ParseCIDR(s); err == nil {
		return n.String()
	}
	return s
}

// defaultTiers are created before any write (see ensureInitialized), so policies may use them.
var defaultTiers = []struct {
	name   string
	action string
	order  float64
}{
	{api.TierDefault, api.ActionDeny, 1000000},
	{"kube-admin", api.ActionPass, 1000},
	{"kube-baseline", api.ActionPass, 10000000},
}

// tierChecks requires the tier of every policy document to exist, in the datastore or in the input.
func (s *session) tierChecks(docs []*document) ([]crossProblem, error) {
	known := map[string]bool{}
	for _, t := range defaultTiers {
		known[t.name] = true
	}
	for _, d := range docs {
		if t, ok := d.res.(*api.Tier); ok {
			known[t.Name] = true
		}
	}
	var out []crossProblem
	checked := map[string]bool{}
	for _, d := range docs {
		tier := policyTier(d.res)
		if tier == "" || known[tier] {
			continue
		}
		if _, seen := checked[tier]; !seen {
			exists, err := s.tierExists(tier)
			if err != nil {
				return nil, err
			}
			checked[tier] = exists
		}
		if !checked[tier] {
			out = append(out, crossProblem{doc: d, err: notExist("Tier", "", tier)})
		}
	}
	return out, nil
}

func policyTier(r api.Resource) string {
	if p, ok := r.(interface{ View() api.PolicySpecView }); ok {
		return p.View().Tier
	}
	return ""
}

func (s *session) tierExists(name string) (bool, error) {
	ctx, cancel := s.op()
	defer cancel()
	_, err := datastore.GetAs[*api.Tier](ctx, s.ds, "", name)
	switch {
	case err == nil:
		return true, nil
	case datastore.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("reading tier %s: %w", name, err)
}
