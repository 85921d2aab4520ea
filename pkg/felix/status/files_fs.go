package status

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Temporary files are made in the prefix directory, next to (not in) the status directory, so
// that a reader watching the status directory sees each file appear whole, by rename.
const tmpPattern = ".endpoint-status-*.tmp"

// writeAtomically writes content to dir/name through a temporary file in tmpDir (on the same
// file system) renamed into place, mode 0644.
func writeAtomically(tmpDir, dir, name string, content []byte) error {
	tmp, err := os.CreateTemp(tmpDir, tmpPattern)
	if err != nil {
		return fmt.Errorf("writing endpoint status file %q: %w", name, err)
	}
	_, err = tmp.Write(content)
	err = errors.Join(err, tmp.Chmod(0o644), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing endpoint status file %q: %w", name, err)
	}
	return nil
}

// removeFile removes dir/name; a file already gone is fine.
func removeFile(dir, name string) error {
	if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing endpoint status file %q: %w", name, err)
	}
	return nil
}

// readStatusDir creates dir if needed and returns the content of every regular file in it. It
// also removes temporary files a previous run left in prefix.
func readStatusDir(prefix, dir string) (map[string][]byte, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the endpoint status directory: %w", err)
	}
	if stale, err := filepath.Glob(filepath.Join(prefix, tmpPattern)); err == nil {
		for _, p := range stale {
			_ = os.Remove(p)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the endpoint status directory: %w", err)
	}
	out := make(map[string][]byte, len(entries))
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading endpoint status file %q: %w", e.Name(), err)
		}
		out[e.Name()] = b
	}
	return out, nil
}
