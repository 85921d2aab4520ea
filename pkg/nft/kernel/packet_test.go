package kernel

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/netnstest"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
)

// listen accepts and closes connections on addr:port inside ns.
func listen(t *testing.T, ns *nstest.NS, addr string, port int) {
	var ln net.Listener
	ns.Do(t, func() {
		var err error
		if ln, err = net.Listen("tcp", fmt.Sprintf("%s:%d", addr, port)); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

func canConnect(t *testing.T, ns *nstest.NS, addr string, port int) bool {
	var err error
	ns.Do(t, func() {
		var c net.Conn
		if c, err = net.DialTimeout("tcp", fmt.Sprintf("%s:%d", addr, port), 300*time.Millisecond); err == nil {
			c.Close()
		}
	})
	return err == nil
}

// packetTable drops, on the server, TCP from the blocked prefixes to port
// 8080, what matches the concatenated set (198.18.0.1 . tcp . 8083), and,
// through the dispatch map for vethB, ports 8082 and 9000-9100.
func packetTable(t *testing.T, blocked []nft.Element, dispatch bool) *nft.Table {
	tb := nft.NewTable(nft.FamilyIP, "calico")
	must(t, tb.PutSet(&nft.Set{Name: "blocked", Type: nft.TypeIPv4Addr, Interval: true, Elements: blocked}))
	must(t, tb.PutSet(&nft.Set{Name: "np", Type: nft.Concat(nft.TypeIPv4Addr, nft.TypeInetProto, nft.TypeInetService),
		Elements: []nft.Element{nft.ConcatElem(nft.AddrElem(a4("198.18.0.1")), nft.ProtoKey(nft.ProtoTCP).Elem(), nft.PortElem(8083))}}))
	m := &nft.Map{Name: "dispatch", Type: nft.TypeIfname, Elements: map[nft.Key]nft.Verdict{}}
	if dispatch {
		m.Elements[nft.IfnameKey("vethB")] = nft.Goto("from-vethB")
	}
	must(t, tb.PutMap(m))
	must(t, tb.PutChain(&nft.Chain{Name: "from-vethB", Rules: []nft.Rule{
		nft.NewRule(nft.DPort(nft.ProtoTCP, nft.Port(8082), nft.Ports(9000, 9100)), nft.Counter(), nft.Drop()),
	}}))
	must(t, tb.PutChain(&nft.Chain{Name: "input", Base: &nft.BaseChain{Type: nft.ChainFilter, Hook: nft.HookInput}, Rules: []nft.Rule{
		nft.NewRule(nft.SAddrInSet(nft.IPv4, "blocked"), nft.DPort(nft.ProtoTCP, nft.Port(8080)), nft.Counter(), nft.Drop()),
		nft.NewRule(nft.InSet("np", nft.FieldSAddr(nft.IPv4), nft.FieldL4Proto, nft.FieldDPort(0)), nft.Counter(), nft.Drop()),
		nft.NewRule(nft.L4Proto(nft.ProtoTCP), nft.DPort(nft.ProtoTCP, nft.Port(8084)), nft.Accept()),
		nft.NewRule(nft.IIFNameVmap("dispatch")),
	}}))
	return tb
}

// TestKernelPackets sends real TCP connections between two namespaces
// through the rules: the encodings match packets, not just the kernel's
// parser, and partial syncs change what passes.
func TestKernelPackets(t *testing.T) {
	client, server := nstest.New(t), nstest.New(t)
	netnstest.Run(t, "ip", "link", "add", "vethA", "netns", client.Name, "type", "veth", "peer", "name", "vethB", "netns", server.Name)
	client.Exec(t, "ip", "addr", "add", "198.18.0.1/24", "dev", "vethA")
	client.Exec(t, "ip", "link", "set", "vethA", "up")
	server.Exec(t, "ip", "addr", "add", "198.18.0.2/24", "dev", "vethB")
	server.Exec(t, "ip", "link", "set", "vethB", "up")
	for _, port := range []int{8080, 8081, 8082, 8083, 8084, 9050} {
		listen(t, server, "198.18.0.2", port)
	}
	expect := func(stage string, want map[int]bool) {
		t.Helper()
		for port, ok := range want {
			got := canConnect(t, client, "198.18.0.2", port)
			for try := 0; ok && !got && try < 5; try++ { // the machine may be busy
				got = canConnect(t, client, "198.18.0.2", port)
			}
			if got != ok {
				t.Errorf("%s: connect to port %d = %v, want %v", stage, port, got, ok)
			}
		}
	}
	expect("no rules", map[int]bool{8080: true, 8082: true, 8083: true})
	k := newBackend(t, server)
	tb := packetTable(t, []nft.Element{nft.PrefixElem(p4("198.18.0.0/30")), nft.PrefixElem(p4("10.65.0.0/16"))}, true)
	a := newApplier(t, k, tb)
	applyOK(t, a, tb)
	expect("blocked", map[int]bool{8080: false, 8081: true, 8082: false, 8083: false, 8084: true, 9050: false})

	must(t, tb.UpdateSet("blocked", nil, []nft.Element{nft.PrefixElem(p4("198.18.0.0/30"))}))
	if st := applyOK(t, a, tb); st.Ops != 1 || st.ElementsRemoved != 1 {
		t.Errorf("unblocking should be one element deletion, got %+v", st)
	}
	expect("unblocked", map[int]bool{8080: true, 8082: false, 8083: false})

	must(t, tb.UpdateMap("dispatch", nil, []nft.Key{nft.IfnameKey("vethB")}))
	applyOK(t, a, tb)
	expect("no dispatch", map[int]bool{8082: true, 9050: true, 8083: false})
}
