package cni_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/filelock"
)

// Tests of issue 23 point 4: one operation per container attachment at a time, and an ADD of a
// networked container into another network namespace is refused, leaving the first intact.

// attachmentLock is the lock file the plugin takes for a container's eth0.
func (r *rig) attachmentLock(id string) string {
	return filepath.Join(r.dir, "cni", "containers", id+"_eth0")
}

// assertNetworked checks that the container of rc is networked as res says (assertState) and
// that the plugin's CHECK, given res, agrees.
func (r *rig) assertNetworked(rc *libcni.RuntimeConf, res *types100.Result) {
	r.t.Helper()
	r.assertState(rc, res)
	conf := r.confBytes(func(c map[string]any) { c["prevResult"] = res })
	if _, e := r.runPlugin(r.t.(*testing.T), "calico", "CHECK", conf, map[string]string{
		"CNI_NETNS": rc.NetNS, "CNI_CONTAINERID": rc.ContainerID}); e != nil {
		r.t.Errorf("CHECK of %s in %s: %+v", rc.ContainerID, rc.NetNS, e)
	}
}

// assertState checks, without running the plugin, that the container of rc is networked as res
// says: its eth0 with the addresses, the host route through its veth, the WorkloadEndpoint, the
// IPAM handle and the attachment file naming its namespace.
func (r *rig) assertState(rc *libcni.RuntimeConf, res *types100.Result) {
	r.t.Helper()
	ns := strings.TrimPrefix(rc.NetNS, "/var/run/netns/")
	addrs := r.ip("-n", ns, "-o", "addr", "show", "dev", "eth0")
	for _, ip := range res.IPs {
		if !strings.Contains(addrs, ip.Address.IP.String()+"/") {
			r.t.Errorf("eth0 in %s lacks %s: %s", ns, ip.Address.IP, addrs)
		}
	}
	veth := res.Interfaces[0].Name
	if out := r.ip("-n", r.hostNS, "route", "show", res.IPs[0].Address.IP.String()); !strings.Contains(out, "dev "+veth) {
		r.t.Errorf("host route to %s via %s missing: %q", res.IPs[0].Address.IP, veth, out)
	}
	wep := r.endpoint("default", api.WorkloadEndpointName("host-a", "cni", rc.ContainerID, "eth0"))
	var want []string
	for _, ip := range res.IPs {
		ones, _ := ip.Address.Mask.Size()
		want = append(want, fmt.Sprintf("%s/%d", ip.Address.IP, ones))
	}
	if !slices.Equal(wep.Spec.IPNetworks, want) || wep.Spec.InterfaceName != veth || wep.Spec.MAC != res.Interfaces[1].Mac {
		r.t.Errorf("endpoint %+v, want addresses %v on %s", wep.Spec, want, veth)
	}
	if h := r.keys(datastore.HandleKey("calico-net." + rc.ContainerID)); len(h) != 1 {
		r.t.Errorf("IPAM handle of %s: %v", rc.ContainerID, h)
	}
	if b, err := os.ReadFile(r.attachmentLock(rc.ContainerID)); err != nil || string(b) != rc.NetNS {
		r.t.Errorf("attachment file: %q %v, want %s", b, err, rc.NetNS)
	}
}

// assertRefusedElsewhere checks the error of an ADD into another namespace: it names the
// container and the namespace it is networked in.
func assertRefusedElsewhere(t *testing.T, err error, id, networkedIn string) {
	t.Helper()
	if code := cniCode(t, err); code != 102 || !strings.Contains(err.Error(), fmt.Sprintf("container %q interface eth0 is networked in network namespace %q", id, networkedIn)) {
		t.Errorf("ADD into another namespace: code %d: %v", code, err)
	}
}

// TestSecondAddIntoOtherNetNS: ADD a container, then ADD it again (same container ID and
// interface) into another namespace. The second ADD fails naming the container and the first
// namespace; the DEL a runtime sends after a failed ADD (with the second namespace) leaves the
// first attachment alone; a DEL with the first namespace removes everything.
func TestSecondAddIntoOtherNetNS(t *testing.T) {
	r := newRig(t)
	rc1 := rt("twice-0123456789", "/var/run/netns/"+r.netns("a"))
	rc2 := rt("twice-0123456789", "/var/run/netns/"+r.netns("b"))
	res1, err := r.add("1.0.0", rc1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.add("1.0.0", rc2)
	assertRefusedElsewhere(t, err, rc1.ContainerID, rc1.NetNS)
	if r.linkExists(strings.TrimPrefix(rc2.NetNS, "/var/run/netns/"), "eth0") {
		t.Errorf("the refused ADD created eth0 in the second namespace")
	}
	r.assertNetworked(rc1, res1)
	if err := r.del("1.0.0", rc2); err != nil {
		t.Fatalf("DEL with the second namespace: %v", err)
	}
	r.assertNetworked(rc1, res1)
	if err := r.del("1.0.0", rc1); err != nil {
		t.Fatal(err)
	}
	r.assertClean()
	if _, err := os.Stat(r.attachmentLock(rc1.ContainerID)); !os.IsNotExist(err) {
		t.Errorf("the attachment file outlives DEL: %v", err)
	}
}

// TestConcurrentAddsIntoTwoNetNS: two plugin processes ADD the same container ID and interface
// into two namespaces at once. One succeeds and stays intact; the other fails naming the
// winner's namespace and creates nothing.
func TestConcurrentAddsIntoTwoNetNS(t *testing.T) {
	r := newRig(t)
	for round := range 4 {
		id := fmt.Sprintf("race-%d-0123456789", round)
		rcs := []*libcni.RuntimeConf{rt(id, "/var/run/netns/"+r.netns("a")), rt(id, "/var/run/netns/"+r.netns("b"))}
		results, errs := make([]*types100.Result, 2), make([]error, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, rc := range rcs {
			wg.Go(func() {
				<-start
				results[i], errs[i] = r.add("1.0.0", rc)
			})
		}
		close(start)
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: exactly one ADD must succeed: %v, %v", round, errs[0], errs[1])
		}
		win, lose := 0, 1
		if errs[0] != nil {
			win, lose = 1, 0
		}
		assertRefusedElsewhere(t, errs[lose], id, rcs[win].NetNS)
		if r.linkExists(strings.TrimPrefix(rcs[lose].NetNS, "/var/run/netns/"), "eth0") {
			t.Errorf("round %d: the refused ADD created eth0", round)
		}
		r.assertNetworked(rcs[win], results[win])
		if err := r.del("1.0.0", rcs[win]); err != nil {
			t.Fatal(err)
		}
		r.assertClean()
	}
}

// TestAttachmentLockSerializes: while another process holds a container's attachment lock, its
// ADD and DEL wait and change nothing; they proceed when it is released, and the lock file is
// gone after DEL.
func TestAttachmentLockSerializes(t *testing.T) {
	r := newRig(t)
	rc := rt("locked-0123456789", "/var/run/netns/"+r.netns("c"))
	var res *types100.Result
	r.whileLocked(rc.ContainerID, func() error {
		var err error
		res, err = r.add("1.0.0", rc)
		return err
	}, func() {
		r.assertClean()
		if r.linkExists(strings.TrimPrefix(rc.NetNS, "/var/run/netns/"), "eth0") {
			t.Errorf("ADD created eth0 while the lock was held")
		}
	})
	r.assertNetworked(rc, res)
	r.whileLocked(rc.ContainerID, func() error { return r.del("1.0.0", rc) }, func() { r.assertState(rc, res) })
	r.assertClean()
	if _, err := os.Stat(r.attachmentLock(rc.ContainerID)); !os.IsNotExist(err) {
		t.Errorf("the attachment file outlives DEL: %v", err)
	}
}

// whileLocked holds the attachment lock of container id, runs op in the background until the
// plugin logs that it waits for the lock, runs during, releases the lock and waits for op.
func (r *rig) whileLocked(id string, op func() error, during func()) {
	r.t.Helper()
	l, err := filelock.Acquire(context.Background(), r.attachmentLock(id), time.Second, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	logSize := r.logSize()
	done := make(chan error, 1)
	go func() { done <- op() }()
	if ok, result := r.awaitLog(logSize, "waiting for it", done); !ok {
		l.Release()
		r.t.Fatalf("the plugin did not wait for the lock of %s (it returned %v)", id, result)
	}
	during()
	l.Release()
	if err := <-done; err != nil {
		r.t.Fatalf("operation after the lock was released: %v", err)
	}
}

func (r *rig) logSize() int64 {
	st, err := os.Stat(filepath.Join(r.dir, "cni.log"))
	if err != nil {
		return 0
	}
	return st.Size()
}

// awaitLog waits until the plugin's log, past offset from, holds text. It returns false with
// op's result when op ends first (or after a minute, with nil).
func (r *rig) awaitLog(from int64, text string, done <-chan error) (bool, error) {
	deadline := time.After(time.Minute)
	for {
		if b, err := os.ReadFile(filepath.Join(r.dir, "cni.log")); err == nil && int64(len(b)) > from &&
			strings.Contains(string(b[from:]), text) {
			return true, nil
		}
		select {
		case err := <-done:
			return false, err
		case <-deadline:
			return false, nil
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestAttachmentLockUnusable: a lock directory that cannot be made fails ADD before anything is
// allocated, saying so (not "another operation is running").
func TestAttachmentLockUnusable(t *testing.T) {
	r := newRig(t)
	file := filepath.Join(r.dir, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r.conf["ipam_lock_file"] = filepath.Join(file, "ipam.lock") // cni/containers would be under a file
	_, err := r.add("1.0.0", rt("unusable-lock", "/var/run/netns/"+r.netns("c")))
	if code := cniCode(t, err); code != 999 || !strings.Contains(err.Error(), "taking the lock of container") {
		t.Errorf("ADD with an unusable lock directory: code %d: %v", code, err)
	}
	r.assertClean()
}
