package filelock

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// procLocks lists the kernel's file locks.
const procLocks = "/proc/locks"

// Holders returns the PIDs holding a flock on the file at path, as /proc/locks lists them (nil
// when unknown). It names the holder in messages only: the lock itself never depends on it.
func Holders(path string) []int {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil
	}
	f, err := os.Open(procLocks)
	if err != nil {
		return nil
	}
	defer f.Close()
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	var pids []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if pid, ok := flockHolder(sc.Text(), id); ok {
			pids = append(pids, pid)
		}
	}
	return pids
}

// flockHolder parses one /proc/locks line ("1: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF"):
// the PID of a granted flock on the file id ("major:minor:inode"). Waiters ("->") are skipped.
func flockHolder(line, id string) (int, bool) {
	f := strings.Fields(line)
	if len(f) < 6 || f[1] != "FLOCK" || f[5] != id {
		return 0, false
	}
	pid, err := strconv.Atoi(f[4])
	return pid, err == nil && pid > 0
}
