package diags

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
)

// DefaultTimeout bounds a collector that sets no timeout of its own.
const DefaultTimeout = 20 * time.Second

// maxFileSize bounds a collected file: what is beyond it is cut, saying so.
const maxFileSize = 32 << 20

// File is one file of the bundle, its name relative to the bundle's top directory.
type File struct {
	Name string
	Data []byte
}

// collector gathers some files. It returns what it got even when it fails part-way.
type collector struct {
	name    string // what it collects, for progress and the summary
	timeout time.Duration
	run     func(ctx context.Context, h *Host) ([]File, error)
}

// Progress is told, before each collector runs, how many have run out of how many, and what
// comes next.
type Progress func(done, total int, what string)

// Result is a finished bundle.
type Result struct {
	Path   string   // the tarball
	Failed []string // collectors that failed (their errors are in the bundle)
}

// Run runs every collector against the host, each within its timeout, and writes the bundle
// into dir. A collector that fails or times out leaves its error in the bundle (next to what it
// got) and the run goes on; only failing to write the bundle fails Run. Every file is redacted
// before it is written.
func Run(ctx context.Context, h *Host, dir string, progress Progress) (*Result, error) {
	b, err := newBundle(dir, h.now())
	if err != nil {
		return nil, err
	}
	res := &Result{Path: b.path}
	list := collectors()
	var summary strings.Builder
	fmt.Fprintf(&summary, "calico-host node diagnostics, %s\n\n", h.now().UTC().Format(time.RFC3339))
	for i, c := range list {
		if ctx.Err() != nil { // interrupted: what was collected is still written
			fmt.Fprintf(&summary, "interrupted before %q: %v\n", c.name, ctx.Err())
			res.Failed = append(res.Failed, "interrupted")
			break
		}
		if progress != nil {
			progress(i, len(list), c.name)
		}
		files, err := runCollector(ctx, h, c)
		for _, f := range files {
			b.add(f)
		}
		if err != nil {
			res.Failed = append(res.Failed, c.name)
			b.add(File{Name: path.Join("errors", slug(c.name)+".txt"), Data: []byte(err.Error() + "\n")})
			fmt.Fprintf(&summary, "%-40s FAILED: %v\n", c.name, err)
		} else {
			fmt.Fprintf(&summary, "%-40s ok (%d files)\n", c.name, len(files))
		}
	}
	if progress != nil {
		progress(len(list), len(list), "")
	}
	b.add(File{Name: "summary.txt", Data: []byte(summary.String())})
	if err := b.close(); err != nil {
		return nil, err
	}
	return res, nil
}

// runCollector runs c within its timeout. A collector that does not return by then is
// abandoned: its context is cancelled (which kills its commands) and its error says so.
func runCollector(ctx context.Context, h *Host, c collector) ([]File, error) {
	timeout := c.timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if h.MaxCollectorTime > 0 && h.MaxCollectorTime < timeout {
		timeout = h.MaxCollectorTime
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type outcome struct {
		files []File
		err   error
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- outcome{err: fmt.Errorf("collector panicked: %v", r)}
			}
		}()
		files, err := c.run(cctx, h)
		done <- outcome{files, err}
	}()
	select {
	case o := <-done:
		if o.err == nil && cctx.Err() != nil {
			o.err = cctx.Err()
		}
		return o.files, o.err
	case <-cctx.Done():
		return nil, fmt.Errorf("%s: gave up after %s: %w", c.name, timeout, cctx.Err())
	}
}

// slug turns a collector name into a file name.
func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// joinErrs joins the errors of a collector's parts (nil when none failed).
func joinErrs(errs []error) error { return errors.Join(errs...) }
