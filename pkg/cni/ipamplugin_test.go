package cni_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	"github.com/calico-host/calico-host/pkg/datastore"
)

// TestCalicoIPAMBinary drives calico-ipam on its own: ADD returns the addresses with their block
// masks (as Project Calico's calico-ipam), a repeated ADD the same ones, CHECK verifies, DEL frees.
func TestCalicoIPAMBinary(t *testing.T) {
	r := newRig(t)
	conf := r.confBytes(nil)
	env := map[string]string{"CNI_CONTAINERID": "ipam-only", "CNI_NETNS": "/var/run/netns/unused"}
	out, e := r.runPlugin(t, "calico-ipam", "ADD", conf, env)
	if e != nil {
		t.Fatalf("ADD: %+v", e)
	}
	var res struct {
		IPs []struct{ Address string } `json:"ips"`
	}
	json.Unmarshal(out, &res)
	if len(res.IPs) != 2 {
		t.Fatalf("result %s", out)
	}
	v4, v6 := netip.MustParsePrefix(res.IPs[0].Address), netip.MustParsePrefix(res.IPs[1].Address)
	if v4.Bits() != 26 || v6.Bits() != 122 {
		t.Errorf("want block masks /26 and /122, got %s %s", v4, v6)
	}
	again, e := r.runPlugin(t, "calico-ipam", "ADD", conf, env)
	if e != nil || string(again) != string(out) {
		t.Errorf("repeated ADD: %s %+v", again, e)
	}
	var withPrev map[string]any
	json.Unmarshal(conf, &withPrev)
	var prev any
	json.Unmarshal(out, &prev)
	withPrev["prevResult"] = prev
	checkConf, _ := json.Marshal(withPrev)
	if _, e := r.runPlugin(t, "calico-ipam", "CHECK", checkConf, env); e != nil {
		t.Errorf("CHECK: %+v", e)
	}
	if _, e := r.runPlugin(t, "calico-ipam", "DEL", conf, env); e != nil {
		t.Fatalf("DEL: %+v", e)
	}
	if _, e := r.runPlugin(t, "calico-ipam", "CHECK", checkConf, env); e == nil || e.Code != 104 {
		t.Errorf("CHECK after DEL: %+v", e)
	}
	r.assertClean()
}

// TestConcurrentAdds: parallel plugin processes on one host (serialised by the IPAM lock) hand
// out distinct addresses.
func TestConcurrentAdds(t *testing.T) {
	r := newRig(t)
	conf := r.confBytes(func(c map[string]any) { c["ipam"] = map[string]any{"type": "calico-ipam"} })
	const n = 16
	paths := make([]string, n)
	for i := range paths {
		paths[i] = "/var/run/netns/" + r.netns("p")
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out, e := r.runPlugin(t, "calico", "ADD", conf, map[string]string{"CNI_NETNS": paths[i], "CNI_CONTAINERID": fmt.Sprintf("par-%d", i)})
			if e != nil {
				t.Errorf("ADD %d: %+v", i, e)
				return
			}
			var res struct {
				IPs []struct{ Address string } `json:"ips"`
			}
			json.Unmarshal(out, &res)
			mu.Lock()
			seen[res.IPs[0].Address]++
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct addresses for %d containers: %v", len(seen), n, seen)
	}
	if w := r.keys(datastore.ResourcePrefix + "workloadendpoints/"); len(w) != n {
		t.Errorf("%d endpoints", len(w))
	}
}
