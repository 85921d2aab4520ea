package calicoctl

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/calico-host/calico-host/internal/backoff"
	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// maxUpdateAttempts bounds the read-merge-write retries of an update without a resourceVersion.
const maxUpdateAttempts = 10

// conflictDelays spread writers contending for one object out: a short random wait that grows
// with the attempt (up to about 100 ms).
var conflictDelays = backoff.Backoff{Min: 10 * time.Millisecond, Max: 100 * time.Millisecond, Jitter: 1}

// backoff waits before retry number attempt (from 1), or returns early when the command is
// cancelled.
func (s *session) backoff(attempt int) error {
	return backoff.Sleep(s.ctx, conflictDelays.Delay(attempt-1)+time.Millisecond)
}

func init() {
	for _, a := range []action{actApply, actCreate, actReplace} {
		register(&command{name: a.op(), summary: writeSummary[a], run: func(c *cli, args []string) error {
			return c.runWrite(a, args)
		}})
	}
}

var writeProgressLabel = map[action]string{actApply: "Applying", actCreate: "Creating", actReplace: "Replacing"}

var writeSummary = map[action]string{
	actApply:   "Apply a resource by file, directory or stdin.  This creates a resource\n                 if it does not exist, and replaces a resource if it does exists.",
	actCreate:  "Create a resource by file, directory or stdin.",
	actReplace: "Replace a resource by file, directory or stdin.",
}

func writeUsage(a action) string {
	extra := ""
	if a == actCreate {
		extra = " [--skip-exists]"
	}
	return fmt.Sprintf(`Usage:
  calicoctl %[1]s --filename=<FILENAME> [--recursive] [--skip-empty]%[2]s
                  [--config=<CONFIG>] [--namespace=<NS>]

Options:
  -h --help                    Show this screen.
  -f --filename=<FILENAME>     Filename to use to %[1]s the resource.  If set to
                               "-" loads from stdin. If filename is a directory, this command is
                               invoked for each .json .yaml and .yml file within that directory.
  -R --recursive               Process the filename specified in -f or --filename recursively.
     --skip-empty              Do not error if any files or directory specified using -f or --filename contain no
                               data.
     --skip-exists             (create only) Skip over and treat as successful any attempts to
                               create an entry that already exists.
  -c --config=<CONFIG>         Path to the datastore configuration: our TOML
                               (default /etc/calico/datastore.toml) or Project Calico's
                               calicoctl.cfg.
  -n --namespace=<NS>          Namespace of the resource.
                               Only applicable to NetworkPolicy, NetworkSet, and WorkloadEndpoint.
                               Uses the default namespace if not specified.

Description:
  Every document is parsed, defaulted and validated (also against the other documents and the
  datastore) before anything is written: if any document is invalid, nothing is written.
`, a.op(), extra)
}

// runWrite is apply, create and replace.
func (c *cli) runWrite(act action, args []string) error {
	f := newFlags(act.op(), writeUsage(act))
	var in inputOptions
	var ns namespaceOptions
	var cfg string
	var skipExists bool
	in.define(f)
	ns.define(f, false)
	f.common(&cfg)
	if act == actCreate {
		f.boolean(&skipExists, "skip-exists")
	}
	pos, err := c.parseFlags(f, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || in.filename == "" {
		return failf("Invalid option: 'calicoctl %s'. Use flag '--help' to read about a specific subcommand.", act.op())
	}
	docs, err := c.readDocuments(in)
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		fmt.Fprintln(c.stdout, "No resources specified")
		return nil
	}
	s, err := c.connect(cfg)
	if err != nil {
		return err
	}
	defer s.close()
	refusals, err := s.prepareWrites(docs, ns, act)
	if err != nil {
		return err
	}
	if len(refusals) > 0 {
		return rejected(act, len(docs), singleKind(docs), refusals)
	}
	warnNotImplemented(c.stderr, docs)
	warnStaged(c.stderr, docs)
	s.ensureInitialized()
	o := s.writeAll(docs, act, skipExists)
	if act == actReplace {
		return o.reportReplace(c.stdout)
	}
	return o.report(c.stdout, act)
}

func singleKind(docs []*document) string {
	kind := ""
	for i, d := range docs {
		if i > 0 && d.kind.Kind != kind {
			return ""
		}
		kind = d.kind.Kind
	}
	return kind
}

// progressMinDocuments: inputs of at least this many documents show progress (on a terminal).
const progressMinDocuments = 50

func (s *session) writeAll(docs []*document, act action, skipExists bool) *outcome {
	o := &outcome{total: len(docs), kind: singleKind(docs)}
	p := s.newProgress(writeProgressLabel[act])
	if len(docs) < progressMinDocuments {
		p.on = false
	}
	defer p.finish()
	for i, d := range docs {
		p.update(i, len(docs), "")
		if err := s.writeOne(d, act, skipExists); err != nil {
			o.errs = append(o.errs, err)
			continue
		}
		o.handled++
	}
	return o
}

func (s *session) writeOne(d *document, act action, skipExists bool) error {
	if isKubernetesPolicy(d.res) {
		return s.kubernetesPolicyWrite(d, act)
	}
	var err error
	switch act {
	case actCreate:
		err = s.create(d.res)
		if skipExists && (datastore.IsAlreadyExists(err) || errors.As(err, new(builtinExistsError))) {
			err = nil
		}
	case actReplace:
		err = s.update(d.res)
	case actApply:
		err = s.apply(d.res)
	}
	m := d.meta()
	return calicoError(err, d.kind, m.Namespace, m.Name)
}

// create writes a new object with the metadata Project Calico's calicoctl keeps on a create
// (name, namespace, labels, annotations: see api.ObjectMeta.ForCreate).
func (s *session) create(r api.Resource) error {
	if isBuiltinResource(r) {
		return builtinExistsError{}
	}
	m := r.GetObjectMeta()
	*m = m.ForCreate()
	ctx, cancel := s.op()
	defer cancel()
	_, err := s.ds.Create(ctx, r)
	return err
}

// apply creates the object, or updates it if it exists (with the given resourceVersion, if any).
func (s *session) apply(r api.Resource) error {
	m := r.GetObjectMeta()
	rv := m.ResourceVersion
	m.ResourceVersion = ""
	err := s.create(r)
	if !datastore.IsAlreadyExists(err) && !errors.As(err, new(builtinExistsError)) {
		return err
	}
	m.ResourceVersion = rv
	return s.update(r)
}

// update replaces a stored object. With a resourceVersion it must still be current; without one
// the latest version is read and the write retried on a conflict. As in Project Calico, the
// stored metadata is kept (uid, creationTimestamp, finalizers, ...) except labels and
// annotations, which are replaced by the new ones.
func (s *session) update(r api.Resource) error {
	if isBuiltinResource(r) {
		return errBuiltinUpdate
	}
	k, _ := api.KindOf(r)
	m := r.GetObjectMeta()
	rv := m.ResourceVersion
	for attempt := 1; ; attempt++ {
		cur, err := s.current(k, m.Namespace, m.Name)
		if err != nil {
			return err
		}
		if rv != "" && rv != cur.ResourceVersion {
			return fmt.Errorf("update conflict: %s", identifier(k, m.Namespace, m.Name))
		}
		mergeMetadata(cur, m)
		err = s.write(r)
		if !datastore.IsConflict(err) || rv != "" || attempt == maxUpdateAttempts {
			return err
		}
		if err := s.backoff(attempt); err != nil {
			return err
		}
	}
}

func (s *session) write(r api.Resource) error {
	if isBuiltinResource(r) {
		return errBuiltinUpdate
	}
	ctx, cancel := s.op()
	defer cancel()
	_, err := s.ds.Update(ctx, r)
	return err
}

// current reads the stored metadata of an object. An undecodable stored value yields metadata
// with only the resourceVersion, so an update replaces the garbage.
func (s *session) current(k api.KindInfo, namespace, name string) (*api.ObjectMeta, error) {
	ctx, cancel := s.op()
	defer cancel()
	key := datastore.ResourceKey(k, namespace, name)
	kv, err := s.ds.GetKV(ctx, key)
	if err != nil {
		return nil, err
	}
	old, err := datastore.DecodeResource(key, kv.Value, kv.ModRevision)
	if err != nil {
		return &api.ObjectMeta{Name: name, Namespace: namespace, ResourceVersion: strconv.FormatInt(kv.ModRevision, 10)}, nil
	}
	return old.GetObjectMeta(), nil
}

// mergeMetadata makes m the stored metadata with m's labels and annotations, as Project Calico's
// calicoctl does on an update (mergeMetadataForUpdate).
func mergeMetadata(stored, m *api.ObjectMeta) {
	labels, annotations := m.Labels, m.Annotations
	*m = *stored
	m.Labels, m.Annotations = labels, annotations
}
