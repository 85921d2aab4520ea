package diags

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"
)

// topDir is the bundle's top directory, as in Project Calico's bundle.
const topDir = "diagnostics"

// bundle writes the tarball as files come.
type bundle struct {
	path  string
	f     *os.File
	gz    *gzip.Writer
	tw    *tar.Writer
	mtime time.Time
	seen  map[string]int
	err   error
}

// newBundle creates diags-<time>.tar.gz in dir (mode 0600: even redacted, it describes the host).
func newBundle(dir string, now time.Time) (*bundle, error) {
	p := filepath.Join(dir, fmt.Sprintf("diags-%s.tar.gz", now.Format("20060102_150405")))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating the diagnostics bundle: %w", err)
	}
	gz := gzip.NewWriter(f)
	return &bundle{path: p, f: f, gz: gz, tw: tar.NewWriter(gz), mtime: now, seen: map[string]int{}}, nil
}

// add writes one file, redacted. A name used twice gets a numbered suffix.
func (b *bundle) add(f File) {
	if b.err != nil {
		return
	}
	name := path.Clean("/" + f.Name)[1:]
	if n := b.seen[name]; n > 0 {
		b.seen[name] = n + 1
		name = fmt.Sprintf("%s.%d", name, n)
	} else {
		b.seen[name] = 1
	}
	data := RedactText(f.Data)
	hdr := &tar.Header{Name: topDir + "/" + name, Mode: 0o600, Size: int64(len(data)), ModTime: b.mtime, Typeflag: tar.TypeReg}
	if err := b.tw.WriteHeader(hdr); err != nil {
		b.err = fmt.Errorf("writing %s to the bundle: %w", name, err)
		return
	}
	if _, err := b.tw.Write(data); err != nil {
		b.err = fmt.Errorf("writing %s to the bundle: %w", name, err)
	}
}

func (b *bundle) close() error {
	err := b.err
	for _, c := range []func() error{b.tw.Close, b.gz.Close, b.f.Close} {
		if cerr := c(); err == nil && cerr != nil {
			err = fmt.Errorf("writing the diagnostics bundle: %w", cerr)
		}
	}
	if err != nil {
		os.Remove(b.path)
	}
	return err
}
