package cni_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/cni"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// TestAddWaitsForPolicy: with policy_setup_timeout_seconds, ADD writes the WorkloadEndpoint and
// then waits for felix's endpoint status file before it returns; without the file it returns
// when the timeout passes, with a warning. Project Calico's plugin does the same.
func TestAddWaitsForPolicy(t *testing.T) {
	r := newRig(t)
	statusDir := filepath.Join(r.dir, "endpoint-status")
	if err := os.MkdirAll(statusDir, 0o755); err != nil {
		t.Fatal(err)
	}
	r.conf["policy_setup_timeout_seconds"] = 120
	r.conf["endpoint_status_dir"] = statusDir
	rc := rt("pw1", "/var/run/netns/"+r.netns("c"), [2]string{"K8S_POD_NAMESPACE", "ns1"}, [2]string{"K8S_POD_NAME", "web-0"})
	done := make(chan error, 1)
	go func() { _, err := r.add("1.0.0", rc); done <- err }()

	wep := waitForEndpoint(t, r, "ns1")
	select {
	case err := <-done:
		t.Fatalf("ADD returned before felix's status file existed: %v", err)
	default:
	}
	name, err := cni.EndpointStatusFileName(wep.Namespace, wep.Name)
	if err != nil {
		t.Fatal(err)
	}
	content, _ := json.Marshal(map[string]any{"ifaceName": wep.Spec.InterfaceName, "mac": wep.Spec.MAC, "ipv4Nets": wep.Spec.IPNetworks})
	if err := os.WriteFile(filepath.Join(statusDir, name), content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("ADD: %v", err)
	}

	// No file: ADD returns at the timeout, successfully, and says why it waited.
	r.conf["policy_setup_timeout_seconds"] = 1
	rc2 := rt("pw2", "/var/run/netns/"+r.netns("c"), [2]string{"K8S_POD_NAMESPACE", "ns1"}, [2]string{"K8S_POD_NAME", "web-1"})
	if _, err := r.add("1.0.0", rc2); err != nil {
		t.Fatalf("ADD without a status file: %v", err)
	}
	log, _ := os.ReadFile(filepath.Join(r.dir, "cni.log"))
	if !strings.Contains(string(log), "error waiting for felix to program the endpoint's policy") {
		t.Errorf("no warning about the missing status file in the log:\n%s", log)
	}
}

// waitForEndpoint polls etcd until the namespace has a WorkloadEndpoint and returns it.
func waitForEndpoint(t *testing.T, r *rig, namespace string) *api.WorkloadEndpoint {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		weps, _, err := datastore.ListAs[*api.WorkloadEndpoint](ctx, r.ds, namespace)
		if err == nil && len(weps) == 1 {
			return weps[0]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no WorkloadEndpoint in %s (%v)", namespace, err)
		case <-tick.C:
		}
	}
}
