package filelock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// pollInterval is how often a waiter tries the lock again.
const pollInterval = 2 * time.Millisecond

// Lock is a held exclusive lock on a file.
type Lock struct {
	f    *os.File
	path string
}

// TimeoutError: the lock was still held by another process when the wait ended.
type TimeoutError struct {
	Path    string
	Waited  time.Duration
	Holders []int // PIDs holding the lock when the wait ended (may be empty: unknown)
	Err     error // the context error that ended the wait
}

func (e *TimeoutError) Error() string {
	held := "another process"
	if len(e.Holders) > 0 {
		held = fmt.Sprintf("process %v", e.Holders)
	}
	return fmt.Sprintf("lock %s is held by %s: gave up after %s: %v", e.Path, held, e.Waited.Round(time.Millisecond), e.Err)
}

func (e *TimeoutError) Unwrap() error { return e.Err }

// Acquire takes the exclusive lock of the file at path, creating the file (mode 0600) and its
// directory (0755) when missing. It waits while another process holds the lock, up to timeout or
// until ctx ends (then a *TimeoutError); waiting, when not nil, is called once when it starts to
// wait. The lock is on the file that is at path when Acquire returns.
func Acquire(ctx context.Context, path string, timeout time.Duration, waiting func()) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating the directory of lock %s: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		l, err := tryLock(path)
		if l != nil || err != nil {
			return l, err
		}
		if waiting != nil {
			waiting()
			waiting = nil
		}
		select {
		case <-ctx.Done():
			return nil, &TimeoutError{Path: path, Waited: time.Since(start), Holders: Holders(path), Err: ctx.Err()}
		case <-tick.C:
		}
	}
}

// tryLock opens path and takes its lock without waiting: (nil, nil) when it is held elsewhere or
// the file locked was removed from path meanwhile (try again).
func tryLock(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	return lockOpened(f, path)
}

// lockOpened locks f, opened at path; it closes f unless it returns the Lock.
func lockOpened(f *os.File, path string) (*Lock, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EINTR) {
		f.Close()
		return nil, nil
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if !stillAt(f, path) {
		f.Close() // its holder removed it between our open and our lock
		return nil, nil
	}
	return &Lock{f: f, path: path}, nil
}

// stillAt reports whether the open file f is the file at path.
func stillAt(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(path)
	return err == nil && os.SameFile(held, now)
}

// Release releases the lock (closing the file releases it).
func (l *Lock) Release() { l.f.Close() }

// Remove removes the lock file, then releases the lock: a process waiting for it locks a new file.
func (l *Lock) Remove() error {
	err := os.Remove(l.path)
	l.f.Close()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing lock %s: %w", l.path, err)
	}
	return nil
}

// Path is the lock file's path.
func (l *Lock) Path() string { return l.path }

// Content reads what the lock file holds.
func (l *Lock) Content() ([]byte, error) {
	if _, err := l.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("reading lock %s: %w", l.path, err)
	}
	b, err := io.ReadAll(l.f)
	if err != nil {
		return nil, fmt.Errorf("reading lock %s: %w", l.path, err)
	}
	return b, nil
}

// SetContent replaces what the lock file holds.
func (l *Lock) SetContent(b []byte) error {
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("writing lock %s: %w", l.path, err)
	}
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("writing lock %s: %w", l.path, err)
	}
	return nil
}
