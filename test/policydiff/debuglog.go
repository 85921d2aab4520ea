package policydiff

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"
)

// eventLog (POLICYDIFF_DEBUG=1) timestamps the harness's own steps and every change "nft
// monitor" reports in the host namespace, in one file, to put felix's ruleset changes and the
// probes on one timeline.
type eventLog struct {
	mu sync.Mutex
	f  *os.File
}

func newEventLog(ctx context.Context, netns, file string) (*eventLog, error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	l := &eventLog{f: f}
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", netns, "nft", "monitor")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l.Printf("nft: %s", sc.Text())
		}
		cmd.Wait()
	}()
	return l, nil
}

// Printf adds a timestamped line; a nil log ignores it.
func (l *eventLog) Printf(format string, args ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.f, "%s %s\n", time.Now().Format("15:04:05.000000"), fmt.Sprintf(format, args...))
}
