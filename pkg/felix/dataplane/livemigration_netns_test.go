package dataplane

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/routes"
)

// TestKernelLiveMigrationTarget: on the target host of a live migration the workload's route is
// held back; a gratuitous ARP sent from the workload's namespace makes it appear at the elevated
// priority (512), and once the migration has ended and the (shortened) convergence time has
// passed, it is at the normal priority (1024).
func TestKernelLiveMigrationTarget(t *testing.T) {
	tp := newTopology(t)
	const iface, ip = "tapmig1", "10.65.0.9"
	const otherIface, otherIP = "tapother", "10.65.0.10"
	vm := tp.addWorkload(t, "vm", iface, ip)
	tp.addWorkload(t, "other", otherIface, otherIP)
	for _, w := range [][2]string{{iface, ip}, {otherIface, otherIP}} { // OpenStack plugs no route: felix adds it
		tp.host.Exec(t, "ip", "route", "del", w[1]+"/32", "dev", w[0])
	}
	rh, err := routes.OpenNetlink(tp.host.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rh.Close)
	cfg := FelixDefaults(Config{InterfacePrefixes: []string{"cali", "tap"}, LiveMigrationRouteConvergenceTime: 2 * time.Second})
	rs := routes.New(rh, cfg.routeOwnership(), testLogger(t))
	target := kwep("vm", iface, ip)
	target.Endpoint.LiveMigration = calc.MigrationTarget
	k := startDataplaneWith(t, tp, cfg, []Option{WithRoutes(rs)}, egressAll(), target, kwep("other", otherIface, otherIP))

	waitRoute(t, tp, otherIP, "metric 1024") // a workload not migrating: its route is programmed
	if got := workloadRoute(t, tp, ip); got != "" {
		t.Fatalf("the target's route is programmed before the VM announced itself: %s", got)
	}
	vm.Do(t, func() { sendGratuitousARP(t, "eth0", netip.MustParseAddr(ip)) })
	waitRoute(t, tp, ip, "metric 512")

	done := kwep("vm", iface, ip) // the LiveMigration is deleted: migration complete
	k.send(done)
	waitRoute(t, tp, ip, "metric 1024")
}

// workloadRoute is the host's route to the workload address ("" when none).
func workloadRoute(t *testing.T, tp *topology, ip string) string {
	return strings.TrimSpace(tp.host.Exec(t, "ip", "-4", "route", "show", ip+"/32"))
}

// waitRoute waits for the workload's route to show want (no timing asserted: a generous bound).
func waitRoute(t *testing.T, tp *topology, ip, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := workloadRoute(t, tp, ip)
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("route to %s is %q, want %q", ip, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sendGratuitousARP sends, from the current namespace's interface dev, the gratuitous ARP a VM
// sends when it resumes on a new host (sender and target address both its own).
func sendGratuitousARP(t *testing.T, dev string, addr netip.Addr) {
	t.Helper()
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	f := make([]byte, 14+28)
	copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:12], ifi.HardwareAddr)
	binary.BigEndian.PutUint16(f[12:], unix.ETH_P_ARP)
	a := f[14:]
	binary.BigEndian.PutUint16(a[0:], 1)
	binary.BigEndian.PutUint16(a[2:], unix.ETH_P_IP)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], 1)
	copy(a[8:14], ifi.HardwareAddr)
	ip4 := addr.As4()
	copy(a[14:18], ip4[:])
	copy(a[24:28], ip4[:])
	to := &unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6, Addr: [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	if err := unix.Sendto(fd, f, 0, to); err != nil {
		t.Fatalf("sending a gratuitous ARP on %s: %v", dev, err)
	}
}
