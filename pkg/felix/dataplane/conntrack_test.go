package dataplane

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/felix/calc"
)

// TestConnectionOpenedBeforeFirstApply is the kernel side of calico-felix's request to etcd
// right after its first apply (pkg/felix/firstapply.go). Felix's etcd connection is
// older than its first ruleset, which is what switches conntrack on in a fresh namespace:
//   - when etcd speaks first (a watch event), conntrack takes the packet for a NEW inbound
//     connection from port 2379; the host endpoint's ingress drops it and every retransmission,
//     until the host sends something (this made the first change after ready take 7-12 s);
//   - when the host speaks first, the connection is picked up as outbound to port 2379 (an
//     outbound failsafe) and the peer's data flows at once.
func TestConnectionOpenedBeforeFirstApply(t *testing.T) {
	for _, tc := range []struct {
		name       string
		hostFirst  bool
		wantWithin time.Duration // the peer's data arrives this soon; 0: it is held back
	}{
		{"host speaks first after the apply", true, 300 * time.Millisecond},
		{"peer speaks first after the apply", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTopology(t)
			client, server := openConn(t, tp)
			startDataplane(t, tp, Config{},
				calc.HostEndpointUpdate{Endpoint: &calc.HostEndpoint{Name: "host1-eth0", InterfaceName: "eth0"}})
			if tc.hostFirst {
				if _, err := client.Write([]byte{1}); err != nil {
					t.Fatal(err)
				}
			}
			payload := make([]byte, 1400) // one full segment, like a watch event
			if _, err := server.Write(payload); err != nil {
				t.Fatal(err)
			}
			got := readWithin(client, len(payload), time.Second)
			switch {
			case tc.wantWithin > 0 && got > tc.wantWithin:
				t.Fatalf("the peer's data took %s (want under %s)", got, tc.wantWithin)
			case tc.wantWithin == 0 && got >= 0:
				t.Logf("the peer's data arrived after %s: this kernel does not hold it back", got)
			}
			if tc.hostFirst {
				return
			}
			// Once the host speaks, the peer's retransmission goes through.
			if _, err := client.Write([]byte{1}); err != nil {
				t.Fatal(err)
			}
			if got := readWithin(client, len(payload), 5*time.Second); got < 0 {
				t.Fatal("the peer's data never arrived after the host spoke")
			}
		})
	}
}

// openConn opens a TCP connection from the host (198.18.0.1) to port 2379 on the fabric side
// and exchanges a message both ways, as felix does with etcd before its first apply.
func openConn(t *testing.T, tp *topology) (client, server net.Conn) {
	t.Helper()
	var ln net.Listener
	tp.fabric.Do(t, func() {
		var err error
		if ln, err = net.Listen("tcp", "198.18.0.2:2379"); err != nil {
			t.Fatal(err)
		}
	})
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := dialTCP(t, tp.host, "198.18.0.2", 2379)
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	if _, err := client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(server, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(client, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	return client, server
}

// readWithin reads n bytes from c and returns how long that took, or -1 after timeout.
func readWithin(c net.Conn, n int, timeout time.Duration) time.Duration {
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(timeout))
	defer c.SetReadDeadline(time.Time{})
	if _, err := io.ReadFull(c, make([]byte, n)); err != nil {
		return -1
	}
	return time.Since(start)
}
