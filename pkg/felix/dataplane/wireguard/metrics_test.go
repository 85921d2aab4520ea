package wireguard

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/dataplane/wireguard/wgtest"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// TestReadersDoNotHoldTheLock: while the metrics/STATUS reader waits on a device that does not
// answer (a userspace socket that accepts and never replies), the lock Apply takes is free, so
// a slow read never stalls the dataplane loop.
func TestReadersDoNotHoldTheLock(t *testing.T) {
	netnstest.Require(t)
	name := fmt.Sprintf("wgslow%d", os.Getpid()%100000)
	if err := os.MkdirAll("/var/run/wireguard", 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", wgtest.SocketPath(name))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	m, err := Open("", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.on = []string{name}
	done := make(chan struct{})
	go func() { defer close(done); m.PeersUp(time.Now()) }()
	conn := <-accepted // the reader is now inside its read of the device
	if !m.mu.TryLock() {
		t.Error("the reader holds the manager's lock while it reads a device")
	} else {
		m.mu.Unlock()
	}
	conn.Close() // the read fails; the reader returns
	<-done
}
