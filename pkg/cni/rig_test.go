package cni_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

// binDir holds calico, calico-ipam and cnitool, built once by TestMain (root only).
var binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	code := func() int {
		if netnstest.Privileged() {
			dir, err := buildBinaries()
			if err != nil {
				fmt.Fprintln(os.Stderr, "building the CNI binaries:", err)
				return 1
			}
			defer os.RemoveAll(dir)
			binDir = dir
		}
		return m.Run()
	}()
	os.Exit(code)
}

// buildBinaries builds the plugins and cnitool (from the cni module in go.mod) into a temp dir.
func buildBinaries() (string, error) {
	dir, err := os.MkdirTemp("", "calico-cni-bin-")
	if err != nil {
		return "", err
	}
	root := repoRoot()
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/calico", "./cmd/calico-ipam", "github.com/containernetworking/cni/cnitool")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("%v: %s", err, out)
	}
	return dir, nil
}

// repoRoot is the directory holding go.mod.
func repoRoot() string { return filepath.Dir(filepath.Dir(filepath.Dir(etcdtest.FixturePath("x")))) }

// requirePlugins skips unless privileged tests may run (netnstest.Require) and TestMain built
// the plugins.
func requirePlugins(t testing.TB) {
	t.Helper()
	netnstest.Require(t)
	if binDir == "" {
		t.Skip("the plugins were not built")
	}
}

// rig is one test's world: an embedded etcd with pools, a "host" network namespace the plugins
// run in, and a CNI network configuration list.
type rig struct {
	t        testing.TB
	srv      *etcdtest.Server
	ds       *datastore.Client
	host     *netnstest.NS
	hostNS   string // host.Name (under /var/run/netns)
	conf     map[string]any
	dir      string
	cni      *libcni.CNIConfig
	hostPath string
}

func newRig(t testing.TB) *rig {
	requirePlugins(t)
	r := &rig{t: t, srv: etcdtest.Start(t), dir: t.TempDir()}
	ds, err := datastore.New(r.srv.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ds.Close() })
	r.ds = ds
	ready := true
	r.create(&api.ClusterInformation{ObjectMeta: api.ObjectMeta{Name: "default"}, Spec: api.ClusterInformationSpec{DatastoreReady: &ready}})
	r.pool("v4", "10.65.0.0/16", 26)
	r.pool("v6", "fd5c:1::/64", 122)
	r.host = netnstest.New(t, "cni-h")
	r.hostNS = r.host.Name
	r.hostPath = "/var/run/netns/" + r.hostNS
	r.conf = map[string]any{
		"type": "calico", "etcd_endpoints": r.proxyInHost(), "nodename": "host-a", "mtu": 1410,
		"log_level": "debug", "log_file_path": filepath.Join(r.dir, "cni.log"), "ipam_lock_file": filepath.Join(r.dir, "ipam.lock"),
		"ipam": map[string]any{"type": "calico-ipam", "assign_ipv4": "true", "assign_ipv6": "true"},
	}
	r.cni = libcni.NewCNIConfigWithCacheDir([]string{binDir}, filepath.Join(r.dir, "cache"), nil)
	return r
}

func (r *rig) create(obj api.Resource) {
	r.t.Helper()
	api.SetDefaults(obj)
	if _, err := r.ds.Create(context.Background(), obj); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) pool(name, cidr string, block int) {
	r.create(&api.IPPool{ObjectMeta: api.ObjectMeta{Name: name}, Spec: api.IPPoolSpec{CIDR: cidr, BlockSize: block}})
}

// netns creates a network namespace (lo up), deleted when the test ends, and returns its name.
func (r *rig) netns(role string) string {
	r.t.Helper()
	return netnstest.New(r.t, "cni-"+role).Name
}

func (r *rig) ip(args ...string) string {
	r.t.Helper()
	return netnstest.Run(r.t, append([]string{"ip"}, args...)...)
}

// list is the network configuration list the runtime passes.
func (r *rig) list(version string) *libcni.NetworkConfigList {
	r.t.Helper()
	b, _ := json.Marshal(map[string]any{"cniVersion": version, "name": "calico-net", "plugins": []any{r.conf}})
	l, err := libcni.ConfListFromBytes(b)
	if err != nil {
		r.t.Fatal(err)
	}
	return l
}

// inHost runs fn with this goroutine's thread in the host namespace: plugins exec'd by libcni
// inherit it, so they never touch the real host's network.
func (r *rig) inHost(fn func() error) error { return r.host.In(fn) }

func rt(id, nsPath string, args ...[2]string) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{ContainerID: id, NetNS: nsPath, IfName: "eth0", Args: args}
}

func (r *rig) add(version string, rc *libcni.RuntimeConf) (*types100.Result, error) {
	res, err := r.addRaw(version, rc)
	if err != nil {
		return nil, err
	}
	return types100.NewResultFromResult(res)
}

// addRaw returns the result as the plugin printed it (in the requested version).
func (r *rig) addRaw(version string, rc *libcni.RuntimeConf) (types.Result, error) {
	var res types.Result
	err := r.inHost(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var err error
		res, err = r.cni.AddNetworkList(ctx, r.list(version), rc)
		return err
	})
	return res, err
}

func (r *rig) del(version string, rc *libcni.RuntimeConf) error {
	return r.inHost(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		return r.cni.DelNetworkList(ctx, r.list(version), rc)
	})
}

func (r *rig) check(version string, rc *libcni.RuntimeConf) error {
	return r.inHost(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		return r.cni.CheckNetworkList(ctx, r.list(version), rc)
	})
}

// hostVeths lists the cali* interfaces of the host namespace.
func (r *rig) hostVeths() []string {
	r.t.Helper()
	h, err := netns.GetFromName(r.hostNS)
	if err != nil {
		r.t.Fatal(err)
	}
	defer h.Close()
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		r.t.Fatal(err)
	}
	defer nl.Close()
	links, err := nl.LinkList()
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Name, "cali") {
			out = append(out, l.Attrs().Name)
		}
	}
	return out
}

// keys counts the etcd keys under a prefix.
func (r *rig) keys(prefix string) []string {
	r.t.Helper()
	kvs, _, err := r.ds.ListKV(context.Background(), prefix, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, kv := range kvs {
		out = append(out, kv.Key)
	}
	return out
}

// assertClean checks that nothing of a container is left: no handle, no allocation, no endpoint,
// no host veth.
func (r *rig) assertClean() {
	r.t.Helper()
	if h := r.keys(datastore.HandlePrefix); len(h) != 0 {
		r.t.Errorf("handles left: %v", h)
	}
	if w := r.keys(datastore.ResourcePrefix + "workloadendpoints/"); len(w) != 0 {
		r.t.Errorf("endpoints left: %v", w)
	}
	if v := r.hostVeths(); len(v) != 0 {
		r.t.Errorf("host veths left: %v", v)
	}
	kvs, _, _ := r.ds.ListKV(context.Background(), datastore.BlockPrefix, 0)
	for _, kv := range kvs {
		var b api.AllocationBlock
		json.Unmarshal(kv.Value, &b)
		for i, a := range b.Allocations {
			if a != nil {
				r.t.Errorf("block %s still allocates ordinal %d", b.CIDR, i)
			}
		}
	}
}

// proxyInHost listens on 127.0.0.1 inside the host namespace and forwards each connection to the
// embedded etcd on the real loopback, so that plugins running in the host namespace reach etcd.
func (r *rig) proxyInHost() string {
	r.t.Helper()
	var l net.Listener
	err := r.inHost(func() error {
		var err error
		l, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	})
	if err != nil {
		r.t.Fatalf("listening in the host namespace: %v", err)
	}
	target := strings.TrimPrefix(r.srv.Endpoints[0], "http://")
	var mu sync.Mutex
	var conns []net.Conn
	r.t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.DialTimeout("tcp", target, 2*time.Second)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return "http://" + l.Addr().String()
}
