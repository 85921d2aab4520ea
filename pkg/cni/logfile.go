package cni

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/containernetworking/cni/pkg/types"
)

// rotation is the log file's rotation policy, Project Calico's log_file_max_size (MB, default
// 100), log_file_max_age (days, default 30) and log_file_max_count (default 10); 0 means the
// default, as in Project Calico.
type rotation struct {
	maxBytes int64
	maxAge   time.Duration
	maxCount int
}

// Defaults and upper bounds of the rotation settings.
const (
	defaultLogMaxSizeMB = 100
	defaultLogMaxAgeDay = 30
	defaultLogMaxCount  = 10
	maxLogSizeMB        = 1 << 20 // 1 TiB
	maxLogAgeDays       = 36500
	maxLogCount         = 10000
)

// rotation validates the log_file_max_* settings.
func (c *NetConf) rotation() (rotation, error) {
	settings := []struct {
		name     string
		v        int
		def, top int
	}{
		{"log_file_max_size", c.LogFileMaxSize, defaultLogMaxSizeMB, maxLogSizeMB},
		{"log_file_max_age", c.LogFileMaxAge, defaultLogMaxAgeDay, maxLogAgeDays},
		{"log_file_max_count", c.LogFileMaxCount, defaultLogMaxCount, maxLogCount},
	}
	vals := make([]int, len(settings))
	for i, s := range settings {
		if s.v < 0 || s.v > s.top {
			return rotation{}, cniErrf(types.ErrInvalidNetworkConfig, "invalid %s %d: must be between 0 (default %d) and %d", s.name, s.v, s.def, s.top)
		}
		vals[i] = cmpOr(s.v, s.def)
	}
	return rotation{maxBytes: int64(vals[0]) << 20, maxAge: time.Duration(vals[1]) * 24 * time.Hour, maxCount: vals[2]}, nil
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// backupTime is the time stamp in rotated file names: "cni-2024-05-01T10-20-30.000.log", the
// naming of lumberjack (and of timberjack, which Project Calico's plugin uses).
const backupTime = "2006-01-02T15-04-05.000"

// openLogFile opens the log file for appending. When it has reached the maximum size it is first
// renamed to a time-stamped backup, and backups beyond the maximum count or older than the maximum
// age are removed. Plugins run as parallel processes: the rotation holds an flock on the directory
// and checks the size again under it, so one process rotates and the others append to the new file.
// Each invocation writes a few kilobytes, so checking at open bounds the file closely.
func openLogFile(path FilePath, r rotation, now time.Time) (*os.File, error) {
	p := string(path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("creating the log directory: %w", err)
	}
	if st, err := os.Stat(p); err == nil && st.Size() >= r.maxBytes {
		if err := rotateLocked(p, r, now); err != nil {
			return nil, err
		}
	}
	return os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

func rotateLocked(path string, r rotation, now time.Time) error {
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("opening the log directory: %w", err)
	}
	defer dir.Close() // releases the lock
	if err := syscall.Flock(int(dir.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking the log directory: %w", err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() < r.maxBytes {
		return nil // rotated meanwhile by another process
	}
	ext := filepath.Ext(path)
	backup := strings.TrimSuffix(path, ext) + "-" + now.UTC().Format(backupTime) + ext
	if _, err := os.Lstat(backup); !errors.Is(err, fs.ErrNotExist) {
		return nil // a backup of this millisecond exists: rotate next time
	}
	if err := os.Rename(path, backup); err != nil {
		return fmt.Errorf("rotating %s: %w", path, err)
	}
	return pruneBackups(path, r, now)
}

// pruneBackups removes the rotated files of path beyond the maximum count or age.
func pruneBackups(path string, r rotation, now time.Time) error {
	ext := filepath.Ext(path)
	prefix := filepath.Base(strings.TrimSuffix(path, ext)) + "-"
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("listing rotated logs: %w", err)
	}
	type backup struct {
		name string
		t    time.Time
	}
	var backups []backup
	for _, e := range entries {
		stamp, ok := strings.CutPrefix(e.Name(), prefix)
		stamp, ok2 := strings.CutSuffix(stamp, ext)
		t, err := time.Parse(backupTime, stamp)
		if ok && ok2 && err == nil && e.Type().IsRegular() {
			backups = append(backups, backup{e.Name(), t})
		}
	}
	slices.SortFunc(backups, func(a, b backup) int { return b.t.Compare(a.t) }) // newest first
	var errs []error
	for i, b := range backups {
		if i >= r.maxCount || now.Sub(b.t) > r.maxAge {
			if err := os.Remove(filepath.Join(filepath.Dir(path), b.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
