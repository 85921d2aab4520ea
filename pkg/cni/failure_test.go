package cni_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/datastore"
)

func cniCode(t *testing.T, err error) uint {
	t.Helper()
	var e *types.Error
	if !errors.As(err, &e) {
		t.Fatalf("want a CNI error object, got %T %v", err, err)
	}
	if e.Msg == "" {
		t.Errorf("CNI error %d has no message", e.Code)
	}
	return e.Code
}

// TestFailedAddLeavesNothing: every failed ADD leaves no address, veth or endpoint behind.
func TestFailedAddLeavesNothing(t *testing.T) {
	t.Run("netns is not a namespace", func(t *testing.T) {
		r := newRig(t)
		file := filepath.Join(t.TempDir(), "not-a-netns")
		os.WriteFile(file, nil, 0o644)
		_, err := r.add("1.0.0", rt("bad-netns", file))
		if code := cniCode(t, err); code != types.ErrInvalidEnvironmentVariables {
			t.Errorf("code %d: %v", code, err)
		}
		r.assertClean()
	})
	t.Run("netns does not exist", func(t *testing.T) {
		r := newRig(t)
		_, err := r.add("1.0.0", rt("gone-netns", "/var/run/netns/does-not-exist-cnit"))
		if code := cniCode(t, err); code != types.ErrUnknownContainer {
			t.Errorf("code %d: %v", code, err)
		}
		r.assertClean()
	})
	t.Run("etcd stopped", func(t *testing.T) {
		r := newRig(t)
		ns := r.netns("c")
		r.srv.Stop()
		start := time.Now()
		_, err := r.add("1.0.0", rt("etcd-down", "/var/run/netns/"+ns))
		if code := cniCode(t, err); code != types.ErrTryAgainLater {
			t.Errorf("code %d: %v", code, err)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("ADD against a stopped etcd took %v", d)
		}
		r.srv.Restart()
		r.assertClean()
		if out := r.ip("-n", ns, "-o", "link"); strings.Contains(out, "eth0") {
			t.Errorf("container interface left: %s", out)
		}
	})
	t.Run("endpoint write refused midway", func(t *testing.T) {
		r := newRig(t)
		ns := r.netns("c")
		admin := r.restrictToIPAM(t)
		_, err := r.add("1.0.0", rt("refused-midway", "/var/run/netns/"+ns))
		if code := cniCode(t, err); code != 103 {
			t.Errorf("code %d: %v", code, err)
		}
		r.ds = admin
		r.assertClean()
		if out := r.ip("-n", ns, "-o", "link"); strings.Contains(out, "eth0") {
			t.Errorf("container interface left: %s", out)
		}
		if log, _ := os.ReadFile(filepath.Join(r.dir, "cni.log")); !bytes.Contains(log, []byte("assigned addresses")) {
			t.Errorf("the ADD did not get as far as IPAM; the test proves nothing:\n%s", log)
		}
	})
}

// restrictToIPAM turns on etcd authentication and makes the plugins log in as a user that may
// read everything but write only IPAM keys: the WorkloadEndpoint write fails after IPAM and the
// veth have succeeded. It returns a datastore client with full rights for the assertions.
func (r *rig) restrictToIPAM(t *testing.T) *datastore.Client {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cli := r.srv.Client()
	steps := []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, "cni"); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, "cni", "/calico/", clientv3.GetPrefixRangeEnd("/calico/"), clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error {
			_, err := cli.RoleGrantPermission(ctx, "cni", "/calico/ipam/", clientv3.GetPrefixRangeEnd("/calico/ipam/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, "cni", "cnipw"); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "cni", "cni"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for i, s := range steps {
		if err := s(); err != nil {
			t.Fatalf("etcd auth step %d: %v", i, err)
		}
	}
	t.Setenv("ETCD_USERNAME", "cni")
	t.Setenv("ETCD_PASSWORD", "cnipw")
	cfg := r.srv.Datastore()
	cfg.Etcd.Username, cfg.Etcd.Password = "root", "rootpw"
	admin, err := datastore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	return admin
}

// runPlugin runs a plugin binary the way a runtime does, inside the host namespace, and returns
// its stdout and the decoded error object (nil on success).
func (r *rig) runPlugin(t *testing.T, plugin, command string, stdin []byte, env map[string]string) ([]byte, *types.Error) {
	t.Helper()
	return r.runCNI(t, plugin, []string{filepath.Join(binDir, plugin)}, cniEnv(command, "bad-input", env), stdin)
}

// cniEnv is a plugin's environment as a runtime sets it: the command, the plugin directory,
// eth0, the container id, then extra and env.
func cniEnv(command, containerID string, env map[string]string, extra ...string) []string {
	out := append([]string{"CNI_COMMAND=" + command, "CNI_PATH=" + binDir, "CNI_IFNAME=eth0", "CNI_CONTAINERID=" + containerID}, extra...)
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// runCNI runs argv (a plugin, or a command that execs one) inside the host namespace with env
// and stdin, and returns its stdout and the decoded error object (nil on success). A panic, or
// a failure without a CNI error object, fails the test.
func (r *rig) runCNI(t *testing.T, plugin string, argv, env []string, stdin []byte) ([]byte, *types.Error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := r.inHost(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Env = bytes.NewReader(stdin), &stdout, &stderr, env
		return cmd.Run()
	})
	if strings.Contains(stderr.String(), "panic") || strings.Contains(stdout.String(), "panic") {
		t.Fatalf("%s panicked:\n%s", plugin, stderr.String())
	}
	if err == nil {
		return stdout.Bytes(), nil
	}
	var e types.Error
	if jerr := json.Unmarshal(stdout.Bytes(), &e); jerr != nil || e.Code == 0 || e.Msg == "" {
		t.Fatalf("%s failed (%v) without a CNI error object: stdout %q stderr %q", plugin, err, stdout.String(), stderr.String())
	}
	return stdout.Bytes(), &e
}

func (r *rig) confBytes(mutate func(map[string]any)) []byte {
	c := map[string]any{"cniVersion": "1.0.0", "name": "calico-net"}
	for k, v := range r.conf {
		c[k] = v
	}
	if mutate != nil {
		mutate(c)
	}
	b, _ := json.Marshal(c)
	return b
}

// TestBadInput: bad input gives a CNI error object with a clear message and code, no panic and
// no partial state.
func TestBadInput(t *testing.T) {
	r := newRig(t)
	r.pool("tiny", "10.65.250.0/30", 30)
	ns := "/var/run/netns/" + r.netns("c")
	cases := []struct {
		name    string
		plugin  string
		stdin   []byte
		env     map[string]string
		code    uint
		msgPart string
	}{
		{"invalid JSON", "calico", []byte(`{"cniVersion": "1.0.0", "name": `), map[string]string{"CNI_NETNS": ns}, types.ErrDecodingFailure, ""},
		{"invalid JSON to calico-ipam", "calico-ipam", []byte(`not json`), map[string]string{"CNI_NETNS": ns}, types.ErrDecodingFailure, ""},
		{"unknown IPAM type", "calico", r.confBytes(func(c map[string]any) { c["ipam"] = map[string]any{"type": "no-such-ipam"} }),
			map[string]string{"CNI_NETNS": ns}, types.ErrInvalidNetworkConfig, "unknown IPAM type"},
		{"missing netns", "calico", r.confBytes(nil), nil, types.ErrInvalidEnvironmentVariables, "CNI_NETNS"},
		{"kubernetes datastore", "calico", r.confBytes(func(c map[string]any) { c["datastore_type"] = "kubernetes" }),
			map[string]string{"CNI_NETNS": ns}, types.ErrInvalidNetworkConfig, "etcdv3"},
		{"unsupported CNI version", "calico", r.confBytes(func(c map[string]any) { c["cniVersion"] = "9.9.9" }),
			map[string]string{"CNI_NETNS": ns}, types.ErrIncompatibleCNIVersion, ""},
		{"bad CNI_ARGS IP", "calico", r.confBytes(nil), map[string]string{"CNI_NETNS": ns, "CNI_ARGS": "IP=banana"},
			types.ErrInvalidEnvironmentVariables, "IP"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, e := r.runPlugin(t, c.plugin, "ADD", c.stdin, c.env)
			if e == nil || e.Code != c.code || !strings.Contains(e.Msg+e.Details, c.msgPart) {
				t.Fatalf("want code %d mentioning %q, got %+v", c.code, c.msgPart, e)
			}
			r.assertClean()
		})
	}

	t.Run("exhausted pool", func(t *testing.T) {
		tiny := r.confBytes(func(c map[string]any) {
			c["ipam"] = map[string]any{"type": "calico-ipam", "ipv4_pools": []string{"tiny"}}
		})
		for i := 0; i < 5; i++ {
			cns := "/var/run/netns/" + r.netns("x")
			env := map[string]string{"CNI_NETNS": cns, "CNI_CONTAINERID": fmt.Sprintf("tiny-%d", i)}
			_, e := r.runPlugin(t, "calico", "ADD", tiny, env)
			if i < 4 {
				if e != nil {
					t.Fatalf("ADD %d: %+v", i, e)
				}
				continue
			}
			if e == nil || e.Code != 101 || !strings.Contains(e.Details, "no free addresses") {
				t.Fatalf("ADD on an exhausted pool: %+v", e)
			}
			if out := r.ip("-n", strings.TrimPrefix(cns, "/var/run/netns/"), "-o", "link"); strings.Contains(out, "eth0") {
				t.Errorf("interface left after a failed ADD")
			}
		}
		if h := r.keys(datastore.HandlePrefix); len(h) != 4 {
			t.Errorf("handles: %v", h)
		}
		if v := r.hostVeths(); len(v) != 4 {
			t.Errorf("host veths: %v", v)
		}
	})
}

// TestDatastoreNotReady: ClusterInformation datastoreReady false blocks ADD.
func TestDatastoreNotReady(t *testing.T) {
	r := newRig(t)
	ns := "/var/run/netns/" + r.netns("c")
	if _, err := r.srv.Client().Put(context.Background(), datastore.ResourcePrefix+"clusterinformations/default",
		`{"kind":"ClusterInformation","apiVersion":"projectcalico.org/v3","metadata":{"name":"default"},"spec":{"datastoreReady":false}}`); err != nil {
		t.Fatal(err)
	}
	_, e := r.runPlugin(t, "calico", "ADD", r.confBytes(nil), map[string]string{"CNI_NETNS": ns})
	if e == nil || e.Code != types.ErrTryAgainLater || !strings.Contains(e.Msg, "not ready") {
		t.Fatalf("want try-again-later, got %+v", e)
	}
	r.assertClean()
}
