package nft

import (
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/vishvananda/netns"
)

// inNetNS runs fn on a thread switched into the namespace; sockets made
// there stay in it.
func inNetNS(t *testing.T, ns *testNetNS, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	if err := netns.Set(netns.NsHandle(ns.fd)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			panic(err) // never leave a thread in the wrong namespace
		}
	}()
	fn()
}

// listen accepts and closes connections on addr:port inside ns.
func listen(t *testing.T, ns *testNetNS, addr string, port int) {
	var ln net.Listener
	inNetNS(t, ns, func() {
		var err error
		ln, err = net.Listen("tcp", fmt.Sprintf("%s:%d", addr, port))
		if err != nil {
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

// canConnect dials from inside ns.
func canConnect(t *testing.T, ns *testNetNS, addr string, port int) bool {
	var err error
	inNetNS(t, ns, func() {
		var c net.Conn
		c, err = net.DialTimeout("tcp", fmt.Sprintf("%s:%d", addr, port), 300*time.Millisecond)
		if err == nil {
			c.Close()
		}
	})
	return err == nil
}

func packetRuleset(blocked ...string) *Ruleset {
	rs := NewRuleset()
	rs.AddSet(&Set{Name: "blocked", Type: TypeIPv4Addr, Interval: true, Elements: blocked})
	rs.AddSet(&Set{Name: "np", Type: Concat(TypeIPv4Addr, TypeInetProto, TypeInetService), Elements: []string{"198.18.0.1 . tcp . 8083"}})
	rs.AddMap(&Map{Name: "dispatch", KeyType: TypeIfname, Elements: map[string]Verdict{"vethB": Goto("from-vethB")}})
	rs.AddChain(&Chain{Name: "from-vethB", Rules: []Rule{NewRule(DPort(ProtoTCP, Port(8082), Ports(9000, 9100)), Counter(), Drop())}})
	rs.AddChain(&Chain{Name: "input", Base: &BaseChain{Type: TypeFilter, Hook: HookInput, Priority: PriorityFilter}, Rules: []Rule{
		NewRule(SAddrInSet(IPv4, "blocked"), DPort(ProtoTCP, Port(8080)), Counter(), Drop()),
		NewRule(InSet("np", FieldSAddr(IPv4), FieldL4Proto, FieldDPort(0)), Counter(), Drop()),
		NewRule(L4Proto(ProtoTCP), DPort(ProtoTCP, Port(8084)), Accept()),
		NewRule(IIFNameVmap("dispatch")),
	}})
	return rs
}

// TestKernelPackets sends real TCP connections between two namespaces
// through the rules, proving the encodings match packets, not just that the
// kernel accepted them.
func TestKernelPackets(t *testing.T) {
	client, server := newNetNS(t), newNetNS(t)
	run(t, "ip", "link", "add", "vethA", "netns", client.name, "type", "veth", "peer", "name", "vethB", "netns", server.name)
	client.exec(t, "ip", "addr", "add", "198.18.0.1/24", "dev", "vethA")
	client.exec(t, "ip", "link", "set", "vethA", "up")
	server.exec(t, "ip", "addr", "add", "198.18.0.2/24", "dev", "vethB")
	server.exec(t, "ip", "link", "set", "vethB", "up")
	for port := 8080; port <= 8084; port++ {
		listen(t, server, "198.18.0.2", port)
	}
	listen(t, server, "198.18.0.2", 9050)
	a, _ := server.applier(t)

	// A connection expected to work gets a few tries (the machine may be
	// busy); one expected to be dropped gets one 300 ms attempt.
	expect := func(stage string, want map[int]bool) {
		t.Helper()
		for port, ok := range want {
			got := canConnect(t, client, "198.18.0.2", port)
			for try := 0; ok && !got && try < 5; try++ {
				got = canConnect(t, client, "198.18.0.2", port)
			}
			if got != ok {
				t.Errorf("%s: connect to port %d = %v, want %v", stage, port, got, ok)
			}
		}
	}
	expect("no rules", map[int]bool{8080: true, 8082: true, 8083: true})

	server.apply(t, a, packetRuleset("198.18.0.0/30", "10.65.0.0/16"))
	expect("blocked", map[int]bool{8080: false, 8081: true, 8082: false, 8083: false, 8084: true, 9050: false})

	st := server.apply(t, a, packetRuleset("10.65.0.0/16"))
	if st.Ops != 1 || st.ElementsRemoved != 1 {
		t.Errorf("unblocking should be one element deletion, got %+v", st)
	}
	expect("unblocked", map[int]bool{8080: true, 8082: false, 8083: false})

	rs := packetRuleset("10.65.0.0/16")
	delete(rs.Maps["dispatch"].Elements, "vethB")
	server.apply(t, a, rs)
	expect("no dispatch", map[int]bool{8082: true, 9050: true, 8083: false})
}
