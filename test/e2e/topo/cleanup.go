package topo

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Everything this package creates is named "<tag><pid>-<role>" (a network namespace) and
// undone by a cleanup stack; the stacks of live fabrics are also run on SIGINT/SIGTERM, and
// SweepLeftovers removes what a killed process left behind.

// cleanups is a LIFO stack of undo functions.
type cleanups struct {
	mu  sync.Mutex
	fns []func()
}

func (c *cleanups) push(fn func()) {
	c.mu.Lock()
	c.fns = append(c.fns, fn)
	c.mu.Unlock()
}

// run runs and forgets every function, newest first.
func (c *cleanups) run() {
	for {
		c.mu.Lock()
		if len(c.fns) == 0 {
			c.mu.Unlock()
			return
		}
		fn := c.fns[len(c.fns)-1]
		c.fns = c.fns[:len(c.fns)-1]
		c.mu.Unlock()
		fn()
	}
}

// live is every fabric not yet closed, for the signal handler.
var live struct {
	sync.Mutex
	set map[*Fabric]bool
}

func register(f *Fabric) {
	live.Lock()
	defer live.Unlock()
	if live.set == nil {
		live.set = map[*Fabric]bool{}
	}
	live.set[f] = true
}

func unregister(f *Fabric) {
	live.Lock()
	defer live.Unlock()
	delete(live.set, f)
}

// CloseAll closes every live fabric (processes, namespaces, directories).
func CloseAll() {
	live.Lock()
	var fs []*Fabric
	for f := range live.set {
		fs = append(fs, f)
	}
	live.Unlock()
	for _, f := range fs {
		f.Close()
	}
}

var atExit struct {
	sync.Mutex
	fns []func()
}

// AtExit registers fn to run after the fabrics are closed when a signal ends the process
// (for example removing a build directory).
func AtExit(fn func()) {
	atExit.Lock()
	atExit.fns = append(atExit.fns, fn)
	atExit.Unlock()
}

// HandleSignals makes SIGINT, SIGTERM, SIGHUP and SIGPIPE (the output went away) close every
// live fabric, then exit with 130. Call it once from main or TestMain.
func HandleSignals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	go func() {
		sig := <-ch
		fmt.Fprintf(os.Stderr, "\n%s: cleaning up network namespaces and processes...\n", sig)
		CloseAll()
		atExit.Lock()
		for _, fn := range atExit.fns {
			fn()
		}
		atExit.Unlock()
		os.Exit(130)
	}()
}

// leftoverPid parses "<tag><pid>-..." and returns pid.
func leftoverPid(name, tag string) (int, bool) {
	rest, ok := strings.CutPrefix(name, tag)
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(digits)
	return pid, ok && err == nil && pid > 0
}

// SweepLeftovers deletes the namespaces named "<tag><pid>-..." whose creating process <pid> is
// gone (killed before it could clean up), with every process still running in them. It returns
// the names it deleted.
func SweepLeftovers(tag string) []string {
	entries, err := os.ReadDir("/var/run/netns")
	if err != nil {
		return nil
	}
	var deleted []string
	for _, e := range entries {
		pid, ok := leftoverPid(e.Name(), tag)
		if !ok || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		deleteNetns(e.Name())
		deleted = append(deleted, e.Name())
	}
	return deleted
}

func processAlive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}
