package filesink

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/calico-host/calico-host/pkg/flowlog"
)

// Defaults.
const (
	DefaultDir         = "/var/log/calico/flowlogs"
	FileName           = "flows.log"
	DefaultMaxFileSize = 100 << 20 // bytes
	DefaultMaxFiles    = 5         // rotated files kept besides the current one
)

// Options say where and how much.
type Options struct {
	Dir         string // DefaultDir when empty
	MaxFileSize int64  // rotate before a write would pass it; DefaultMaxFileSize when 0
	MaxFiles    int    // rotated files kept (flows.log.1 newest); DefaultMaxFiles when 0
}

// Sink appends flows as JSON lines to Dir/flows.log and rotates it by
// size: flows.log becomes flows.log.1, flows.log.1 becomes flows.log.2 and
// so on, and the oldest beyond MaxFiles is removed. It is not safe for
// concurrent use.
type Sink struct {
	path string
	opts Options
	f    *os.File
	size int64
}

// Open creates Dir (0755) if needed and opens flows.log for appending.
func Open(opts Options) (*Sink, error) {
	if opts.Dir == "" {
		opts.Dir = DefaultDir
	}
	if opts.MaxFileSize == 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	if opts.MaxFiles == 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.MaxFileSize < 0 || opts.MaxFiles < 0 {
		return nil, fmt.Errorf("flow log file: negative size %d or file count %d", opts.MaxFileSize, opts.MaxFiles)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("flow log directory: %w", err)
	}
	s := &Sink{path: filepath.Join(opts.Dir, FileName), opts: opts}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Sink) open() error {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("opening flow log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("opening flow log: %w", err)
	}
	s.f, s.size = f, st.Size()
	return nil
}

// Write appends one line per flow. Lines are never split across files: a
// file is rotated before the line that would take it past MaxFileSize (a
// line longer than that gets a file of its own).
func (s *Sink) Write(flows []flowlog.Flow) error {
	if s.f == nil {
		return errors.New("flow log: closed")
	}
	var buf []byte
	for _, fl := range flows {
		line, err := json.Marshal(fl)
		if err != nil {
			return fmt.Errorf("encoding flow: %w", err)
		}
		line = append(line, '\n')
		if s.size+int64(len(buf)+len(line)) > s.opts.MaxFileSize && s.size+int64(len(buf)) > 0 {
			if err := s.flush(buf); err != nil {
				return err
			}
			buf = buf[:0]
			if err := s.rotate(); err != nil {
				return err
			}
		}
		buf = append(buf, line...)
	}
	return s.flush(buf)
}

func (s *Sink) flush(buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	n, err := s.f.Write(buf)
	s.size += int64(n)
	if err != nil {
		return fmt.Errorf("writing flow log: %w", err)
	}
	return nil
}

// rotate shifts the rotated files up by one, dropping the oldest, and
// starts a new flows.log.
func (s *Sink) rotate() error {
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("rotating flow log: %w", err)
	}
	s.f = nil
	err := ignoreMissing(os.Remove(s.rotated(s.opts.MaxFiles)))
	for i := s.opts.MaxFiles - 1; i >= 1 && err == nil; i-- {
		err = ignoreMissing(os.Rename(s.rotated(i), s.rotated(i+1)))
	}
	if err == nil {
		err = os.Rename(s.path, s.rotated(1))
	}
	if err != nil {
		err = fmt.Errorf("rotating flow log: %w", err)
	}
	return errors.Join(err, s.open())
}

func (s *Sink) rotated(i int) string { return s.path + "." + strconv.Itoa(i) }

func ignoreMissing(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Close closes the file.
func (s *Sink) Close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
