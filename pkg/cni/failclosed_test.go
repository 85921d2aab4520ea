package cni_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// Tests of issue 13: no input may widen policy, inject configuration or break a neighbour.

// linkExists reports whether the interface exists in the named namespace.
func (r *rig) linkExists(ns, name string) bool {
	return exec.Command("ip", "-n", ns, "link", "show", "dev", name).Run() == nil
}

func (r *rig) endpoint(namespace, name string) *api.WorkloadEndpoint {
	r.t.Helper()
	wep, err := datastore.GetAs[*api.WorkloadEndpoint](context.Background(), r.ds, namespace, name)
	if err != nil {
		r.t.Fatalf("WorkloadEndpoint %s/%s: %v", namespace, name, err)
	}
	return wep
}

// TestDelOfOldSandboxKeepsNewOne: with the pod in CNI_ARGS, ADD sandbox A, ADD sandbox B of the
// same pod (new netns), then DEL A (its netns removed, or still there). B's WorkloadEndpoint, host
// veth, route and addresses stay; A's addresses are released (its handle is its own).
func TestDelOfOldSandboxKeepsNewOne(t *testing.T) {
	for _, removeA := range []bool{true, false} {
		t.Run(fmt.Sprintf("netns of A removed=%v", removeA), func(t *testing.T) {
			r := newRig(t)
			pod := [][2]string{{"K8S_POD_NAMESPACE", "team-a"}, {"K8S_POD_NAME", "web-0"}}
			nsA, nsB := r.netns("a"), r.netns("b")
			rcA := rt("sandbox-a", "/var/run/netns/"+nsA, pod...)
			rcB := rt("sandbox-b", "/var/run/netns/"+nsB, pod...)
			if _, err := r.add("1.0.0", rcA); err != nil {
				t.Fatal(err)
			}
			resB, err := r.add("1.0.0", rcB)
			if err != nil {
				t.Fatal(err)
			}
			vethB, ipB := resB.Interfaces[0].Name, resB.IPs[0].Address.IP.String()
			if removeA {
				r.ip("netns", "del", nsA)
			}
			if err := r.del("1.0.0", rcA); err != nil {
				t.Fatalf("DEL A: %v", err)
			}
			wep := r.endpoint("team-a", "host--a-k8s-web--0-eth0")
			if wep.Spec.ContainerID != "sandbox-b" || wep.Spec.InterfaceName != vethB {
				t.Errorf("B's endpoint changed: %+v", wep.Spec)
			}
			if v := r.hostVeths(); len(v) != 1 || v[0] != vethB {
				t.Errorf("host veths %v, want B's %s", v, vethB)
			}
			if out := r.ip("-n", r.hostNS, "route", "show", ipB); !strings.Contains(out, "dev "+vethB) {
				t.Errorf("B's route to %s is gone: %q", ipB, out)
			}
			if !r.linkExists(nsB, "eth0") {
				t.Errorf("B's eth0 is gone")
			}
			if h := r.keys(datastore.HandlePrefix); len(h) != 1 || h[0] != datastore.HandleKey("calico-net.sandbox-b") {
				t.Errorf("handles %v, want only B's", h)
			}
			if err := r.del("1.0.0", rcB); err != nil {
				t.Fatalf("DEL B: %v", err)
			}
			r.assertClean()
		})
	}
}

// TestSharedVethPrefixLeavesNeighbour: two containers whose IDs share their first 11 characters
// would get the same host veth name: the second ADD is refused before anything is allocated, and
// neither it nor its DEL touch the first container's veth.
func TestSharedVethPrefixLeavesNeighbour(t *testing.T) {
	r := newRig(t)
	ns1, ns2 := r.netns("c"), r.netns("c")
	rc1, rc2 := rt("sharedprefix-1", "/var/run/netns/"+ns1), rt("sharedprefix-2", "/var/run/netns/"+ns2)
	res1, err := r.add("1.0.0", rc1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.add("1.0.0", rc2)
	if code := cniCode(t, err); code != 102 || !strings.Contains(err.Error(), "sharedprefix-1") {
		t.Errorf("second ADD: code %d: %v", code, err)
	}
	if err := r.del("1.0.0", rc2); err != nil {
		t.Fatalf("DEL of the refused container: %v", err)
	}
	if v := r.hostVeths(); len(v) != 1 || v[0] != res1.Interfaces[0].Name {
		t.Errorf("host veths %v", v)
	}
	if !r.linkExists(ns1, "eth0") || r.linkExists(ns2, "eth0") {
		t.Errorf("container interfaces: first %v, second %v", r.linkExists(ns1, "eth0"), r.linkExists(ns2, "eth0"))
	}
	if h := r.keys(datastore.HandlePrefix); len(h) != 1 {
		t.Errorf("handles %v", h)
	}
	if err := r.check("1.0.0", rc1); err != nil {
		t.Errorf("CHECK of the first container: %v", err)
	}
	if err := r.del("1.0.0", rc1); err != nil {
		t.Fatal(err)
	}
	r.assertClean()
}

// TestFailedAddLeavesForeignInterface: a namespace that already has eth0 makes ADD fail, and
// neither the ADD nor the DEL the runtime sends next remove that eth0 or its peer.
func TestFailedAddLeavesForeignInterface(t *testing.T) {
	r := newRig(t)
	ns := r.netns("c")
	r.ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "other0")
	rc := rt("foreign-eth0", "/var/run/netns/"+ns)
	_, err := r.add("1.0.0", rc)
	if code := cniCode(t, err); code != 102 || !strings.Contains(err.Error(), "eth0") {
		t.Errorf("code %d: %v", code, err)
	}
	if !r.linkExists(ns, "eth0") || !r.linkExists(ns, "other0") {
		t.Fatalf("the failed ADD removed the namespace's own interfaces")
	}
	r.assertClean()
	if err := r.del("1.0.0", rc); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	if !r.linkExists(ns, "eth0") || !r.linkExists(ns, "other0") {
		t.Fatalf("DEL removed an interface ADD did not create")
	}
	r.assertClean()
}

// TestOwnNetNSRefused: a CNI_NETNS that is the namespace the plugin runs in, by whatever path, is
// refused by ADD, CHECK and DEL before anything is touched.
func TestOwnNetNSRefused(t *testing.T) {
	r := newRig(t)
	r.ip("-n", r.hostNS, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0peer")
	conf := r.confBytes(nil)
	for _, path := range []string{"/proc/self/ns/net", "/proc/thread-self/ns/net", r.hostPath} {
		for _, cmd := range []string{"ADD", "DEL"} {
			t.Run(cmd+" "+path, func(t *testing.T) {
				_, e := r.runPlugin(t, "calico", cmd, conf, map[string]string{"CNI_NETNS": path, "CNI_CONTAINERID": "own-ns"})
				if e == nil || e.Code != types.ErrInvalidEnvironmentVariables || !strings.Contains(e.Msg, "network namespace the plugin runs in") {
					t.Fatalf("want a refusal, got %+v", e)
				}
				if !r.linkExists(r.hostNS, "eth0") || !r.linkExists(r.hostNS, "eth0peer") {
					t.Fatalf("the plugin changed its own namespace's interfaces")
				}
				r.assertClean()
			})
		}
	}
}

// TestInvalidIdentityRefusedBeforeIPAM: names that would make keys or objects the rest of the
// stack rejects are refused with a CNI error naming the input, before any address is allocated;
// a DEL of such an identity touches nothing and succeeds.
func TestInvalidIdentityRefusedBeforeIPAM(t *testing.T) {
	r := newRig(t)
	ns := "/var/run/netns/" + r.netns("c")
	long := strings.Repeat("a", 150)
	cases := []struct {
		name   string
		conf   func(map[string]any)
		env    map[string]string
		code   uint
		naming string
		objs   bool // refused by the objects the calico plugin writes (calico-ipam alone accepts it, as Project Calico's)
	}{
		{"namespace with a slash", nil, map[string]string{"CNI_ARGS": "K8S_POD_NAMESPACE=a/b;K8S_POD_NAME=web-0"}, 4, "K8S_POD_NAMESPACE", false},
		{"pod with a slash", nil, map[string]string{"CNI_ARGS": "K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=web/0"}, 4, "K8S_POD_NAME", false},
		{"upper-case pod", nil, map[string]string{"CNI_ARGS": "K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=Web-0"}, 4, "K8S_POD_NAME", false},
		{"upper-case container ID", nil, map[string]string{"CNI_CONTAINERID": "ABCdef0123"}, 4, "CNI_CONTAINERID", false},
		{"container ID with '_'", nil, map[string]string{"CNI_CONTAINERID": "abc_def"}, 4, "CNI_CONTAINERID", false},
		{"container ID with '.'", nil, map[string]string{"CNI_CONTAINERID": "abc.def"}, 4, "CNI_CONTAINERID", false},
		{"test namespace", nil, map[string]string{"CNI_TEST_NAMESPACE": "Team_A"}, 4, "CNI_TEST_NAMESPACE", false},
		{"upper-case interface", nil, map[string]string{"CNI_IFNAME": "Eth0"}, 4, "CNI_IFNAME", false},
		{"network name with '_'", func(c map[string]any) { c["name"] = "calico_net" }, nil, 7, "network name", true},
		{"upper-case network name", func(c map[string]any) { c["name"] = "Calico-Net" }, nil, 7, "network name", true},
		{"node name with '_'", func(c map[string]any) { c["nodename"] = "host_a" }, nil, 7, "node name", false},
		{"endpoint name too long", func(c map[string]any) { c["nodename"] = long }, map[string]string{
			"CNI_ARGS": "K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=" + long}, 4, "metadata.name", true},
		{"address with a zone", nil, map[string]string{"CNI_ARGS": "IP=fd5c:1::5%eth0"}, 4, "zone", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{"CNI_NETNS": ns}
			for k, v := range c.env {
				env[k] = v
			}
			conf := r.confBytes(c.conf)
			_, e := r.runPlugin(t, "calico", "ADD", conf, env)
			if e == nil || e.Code != c.code || !strings.Contains(e.Msg+e.Details, c.naming) {
				t.Fatalf("want code %d naming %q, got %+v", c.code, c.naming, e)
			}
			r.assertClean()
			if c.naming == "zone" || c.objs {
				return
			}
			if _, e := r.runPlugin(t, "calico", "DEL", conf, env); e != nil {
				t.Errorf("DEL: %+v", e)
			}
			if _, e := r.runPlugin(t, "calico-ipam", "ADD", conf, env); e == nil || e.Code != c.code {
				t.Errorf("calico-ipam ADD: want code %d, got %+v", c.code, e)
			}
			r.assertClean()
		})
	}
	if p := r.keys(datastore.ResourcePrefix + "profiles/"); len(p) != 0 {
		t.Errorf("profiles written: %v", p)
	}
}

// TestBadFileSettingsRefused: paths, rotation and pool settings that would reach a file or the
// IPAM unchecked are refused.
func TestBadFileSettingsRefused(t *testing.T) {
	r := newRig(t)
	ns := "/var/run/netns/" + r.netns("c")
	cases := []struct {
		name, field string
		value       any
	}{
		{"relative log path", "log_file_path", "cni.log"},
		{"log path with ..", "log_file_path", "/var/log/../../etc/cni.log"},
		{"relative lock file", "ipam_lock_file", "ipam.lock"},
		{"relative nodename file", "nodename_file", "nodename"},
		{"negative log size", "log_file_max_size", -1},
		{"negative log count", "log_file_max_count", -5},
		{"mtu too large", "mtu", 70000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conf := r.confBytes(func(m map[string]any) { m[c.field] = c.value })
			_, e := r.runPlugin(t, "calico", "ADD", conf, map[string]string{"CNI_NETNS": ns})
			if e == nil || e.Code != types.ErrInvalidNetworkConfig || !strings.Contains(e.Msg, c.field) {
				t.Fatalf("want code 7 naming %s, got %+v", c.field, e)
			}
			r.assertClean()
		})
	}
	conf := r.confBytes(func(m map[string]any) {
		m["ipam"] = map[string]any{"type": "calico-ipam", "ipv4_pools": []string{"10.65.0.0/16", "../x"}}
	})
	if _, e := r.runPlugin(t, "calico", "ADD", conf, map[string]string{"CNI_NETNS": ns}); e == nil || !strings.Contains(e.Msg, "ipam.ipv4_pools") {
		t.Errorf("bad pool entry: %+v", e)
	}
	r.assertClean()
}

// TestTLSWithHTTPEndpointRefused: CA/cert/key files with an http:// endpoint, from the network
// configuration or from the datastore file, are refused naming the setting, before anything.
func TestTLSWithHTTPEndpointRefused(t *testing.T) {
	r := newRig(t)
	ns := "/var/run/netns/" + r.netns("c")
	conf := r.confBytes(func(c map[string]any) { c["etcd_ca_cert_file"] = "/etc/calico/pki/ca.pem" })
	_, e := r.runPlugin(t, "calico", "ADD", conf, map[string]string{"CNI_NETNS": ns})
	if e == nil || e.Code != types.ErrInvalidNetworkConfig || !strings.Contains(e.Details, "etcd_ca_cert_file in the CNI network configuration") ||
		!strings.Contains(e.Details, "plain http") {
		t.Fatalf("want a refusal naming etcd_ca_cert_file, got %+v", e)
	}
	r.assertClean()
	etc := r.etcDir(t, "[etcd]\ncert_file = \"/etc/calico/pki/c.pem\"\nkey_file = \"/etc/calico/pki/k.pem\"\n")
	_, e = r.runPluginWithEtc(t, etc, "ADD", r.confBytes(nil), map[string]string{"CNI_NETNS": ns})
	if e == nil || e.Code != types.ErrInvalidNetworkConfig || !strings.Contains(e.Details, "etcd.cert_file in /etc/calico/datastore.toml") {
		t.Fatalf("want a refusal naming etcd.cert_file, got %+v", e)
	}
	r.assertClean()
}

// etcDir makes a directory to be mounted on /etc for one plugin run, holding calico/datastore.toml.
func (r *rig) etcDir(t *testing.T, datastoreTOML string) string {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "calico"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "calico", "datastore.toml"), []byte(datastoreTOML), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runPluginWithEtc runs the calico plugin in the host namespace with etcDir mounted on /etc in a
// private mount namespace of its own (the machine's /etc is untouched).
func (r *rig) runPluginWithEtc(t *testing.T, etcDir, command string, stdin []byte, env map[string]string) ([]byte, *types.Error) {
	t.Helper()
	argv := []string{"unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount --bind "$0" /etc && exec "$1"`, etcDir, filepath.Join(binDir, "calico")}
	return r.runCNI(t, "calico", argv, cniEnv(command, "etc-test", env, "PATH=/usr/bin:/bin:/usr/sbin:/sbin"), stdin)
}

// TestDatastoreFileIsRead: without etcd_* in the network configuration, the plugin connects with
// /etc/calico/datastore.toml; the network configuration still overrides it.
func TestDatastoreFileIsRead(t *testing.T) {
	r := newRig(t)
	endpoint := r.conf["etcd_endpoints"].(string)
	ns := "/var/run/netns/" + r.netns("c")
	noEtcd := r.confBytes(func(c map[string]any) { delete(c, "etcd_endpoints") })
	etc := r.etcDir(t, fmt.Sprintf("[etcd]\nendpoints = [%q]\n", endpoint))
	env := map[string]string{"CNI_NETNS": ns}
	if _, e := r.runPluginWithEtc(t, etc, "ADD", noEtcd, env); e != nil {
		t.Fatalf("ADD with the datastore file: %+v", e)
	}
	if w := r.keys(datastore.ResourcePrefix + "workloadendpoints/"); len(w) != 1 {
		t.Errorf("endpoints %v", w)
	}
	if _, e := r.runPluginWithEtc(t, etc, "DEL", noEtcd, env); e != nil {
		t.Fatalf("DEL with the datastore file: %+v", e)
	}
	r.assertClean()
	wrong := r.etcDir(t, "[etcd]\nendpoints = [\"http://127.0.0.1:1\"]\n")
	if _, e := r.runPluginWithEtc(t, wrong, "ADD", r.confBytes(nil), env); e != nil {
		t.Fatalf("etcd_endpoints must override the file: %+v", e)
	}
	if _, e := r.runPluginWithEtc(t, wrong, "DEL", r.confBytes(nil), env); e != nil {
		t.Fatalf("DEL: %+v", e)
	}
	r.assertClean()
}

// TestLogRotation: cni.log is rotated when it reaches log_file_max_size (MB); rotated files beyond
// log_file_max_count or older than log_file_max_age (days) are removed.
func TestLogRotation(t *testing.T) {
	r := newRig(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "cni.log")
	if err := os.WriteFile(logPath, bytes.Repeat([]byte("old line\n"), (1<<20)/9+1), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	backup := func(age time.Duration) string {
		name := "cni-" + now.Add(-age).Format("2006-01-02T15-04-05.000") + ".log"
		if err := os.WriteFile(filepath.Join(dir, name), []byte("backup\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	hourOld, twoHoursOld, threeDaysOld := backup(time.Hour), backup(2*time.Hour), backup(72*time.Hour)
	conf := r.confBytes(func(c map[string]any) {
		c["log_file_path"], c["log_file_max_size"], c["log_file_max_count"], c["log_file_max_age"] = logPath, 1, 2, 1
	})
	ns := "/var/run/netns/" + r.netns("c")
	if _, e := r.runPlugin(t, "calico", "ADD", conf, map[string]string{"CNI_NETNS": ns}); e != nil {
		t.Fatalf("ADD: %+v", e)
	}
	st, err := os.Stat(logPath)
	if err != nil || st.Size() >= 1<<20 {
		t.Fatalf("cni.log not rotated: %v %v", st.Size(), err)
	}
	if data, _ := os.ReadFile(logPath); !strings.Contains(string(data), "container networked") {
		t.Errorf("this run's log is not in the new file: %q", data)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := map[string]bool{"cni.log": true, hourOld: true}
	rotated := ""
	for _, n := range names {
		if !want[n] {
			rotated = n
		}
	}
	if len(names) != 3 || !strings.HasPrefix(rotated, "cni-") || strings.Contains(strings.Join(names, " "), twoHoursOld) ||
		strings.Contains(strings.Join(names, " "), threeDaysOld) {
		t.Errorf("log directory %v: want cni.log, the new rotated file and %s", names, hourOld)
	}
	if st, err := os.Stat(filepath.Join(dir, rotated)); err != nil || st.Size() < 1<<20 {
		t.Errorf("rotated file %s: %v", rotated, err)
	}
}
