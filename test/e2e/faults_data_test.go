package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/calico-host/calico-host/test/e2e/topo"
)

const resources = "/calico/resources/v3/projectcalico.org/"

// invalidObject returns the i-th of a dozen kinds of bad datastore entries: broken JSON,
// objects that fail validation (selectors, actions, ports, CIDRs, protocols), objects under
// the wrong key, keys of the wrong shape, undecodable IPAM blocks.
func invalidObject(i int) (key, value string) {
	meta := func(name string) string {
		return fmt.Sprintf(`"metadata":{"name":%q,"uid":"00000000-0000-4000-8000-%012d","creationTimestamp":"2026-01-01T00:00:00Z"}`, name, i)
	}
	obj := func(kind, name, spec string) string {
		return fmt.Sprintf(`{"kind":%q,"apiVersion":"projectcalico.org/v3",%s,"spec":%s}`, kind, meta(name), spec)
	}
	n := fmt.Sprintf("bad-%d", i)
	switch i % 12 {
	case 0:
		return resources + "globalnetworkpolicies/" + n, `{"kind":"GlobalNetworkPolicy",` // truncated
	case 1:
		return resources + "globalnetworkpolicies/" + n, obj("GlobalNetworkPolicy", n, `{"selector":"role == (((","ingress":[{"action":"Allow"}]}`)
	case 2:
		return resources + "globalnetworkpolicies/" + n, obj("GlobalNetworkPolicy", n, `{"selector":"has(failclosed)","ingress":[{"action":"Maybe"}]}`)
	case 3:
		return resources + "networkpolicies/default/" + n, obj("NetworkPolicy", n,
			`{"selector":"has(failclosed)","ingress":[{"action":"Allow","protocol":"TCP","destination":{"ports":[99999]}}]}`)
	case 4:
		return resources + "workloadendpoints/default/host--1-cni-bad" + fmt.Sprint(i) + "-eth0", obj("WorkloadEndpoint", "host--1-cni-bad"+fmt.Sprint(i)+"-eth0",
			fmt.Sprintf(`{"orchestrator":"cni","node":"host-1","containerID":"bad%d","endpoint":"eth0","interfaceName":"calibad%07d","ipNetworks":["10.65.300.1/32"]}`, i, i))
	case 5:
		return resources + "hostendpoints/" + n, obj("HostEndpoint", n, `{"node":"host-1"}`)
	case 6:
		return resources + "ippools/" + n, obj("IPPool", n, `{"cidr":"not-a-cidr","natOutgoing":true}`)
	case 7:
		return resources + "profiles/" + n, obj("Profile", n, `{"ingress":[{"action":"Allow","protocol":"FOO"}]}`)
	case 8:
		return resources + "nodes/" + n, obj("Node", n, `{"bgp":{"ipv4Address":"999.1.1.1/24"}}`)
	case 9:
		return resources + "globalnetworkpolicies/" + n, obj("Node", n, `{"bgp":{"ipv4Address":"198.18.0.99/24"}}`) // kind mismatch
	case 10:
		return resources + "bgppeers/" + n, obj("BGPPeer", n, `{"peerIP":"x.y","asNumber":"many"}`)
	default:
		if i%24 == 11 {
			return fmt.Sprintf("/calico/ipam/v2/assignment/ipv4/block/10.65.%d.0-26", 200+i%50), `{"cidr":`
		}
		return resources + "globalnetworksets/" + n + "/extra/segments", obj("GlobalNetworkSet", n, `{"nets":["bogus"]}`)
	}
}

// TestInvalidObjects: 1,000 invalid entries written into etcd crash nothing; valid objects are
// still enforced and new valid changes still applied; CNI still works. The invalid policies whose
// selector parses (has(failclosed)) fail closed: the workload they select drops the ingress they
// would have decided instead of the policies being ignored.
func TestInvalidObjects(t *testing.T) {
	requireBinaries(t)
	s := newSystem(t, topo.Options{Hosts: 2, Mode: topo.ModeBGP}, topo.StartOptions{Felix: true})
	w := s.policyWorld()
	pids := map[*topo.Proc]int{}
	for _, h := range s.Hosts {
		for _, p := range []*topo.Proc{h.Felix, h.Confd, h.Bird, h.Startup} {
			pids[p] = p.Pid()
		}
	}
	fc := s.workload(s.Host(2), "fc", map[string]string{"role": "fc", "failclosed": "true"}, 80)
	s.expect(20*time.Second, tcp(w.web, fc, 80, true))
	ds, err := s.Datastore()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 1000 {
		k, v := invalidObject(i)
		if _, err := ds.Etcd().Put(s.ctx, k, v); err != nil {
			t.Fatalf("writing %s: %v", k, err)
		}
	}
	t.Logf("wrote 1000 invalid entries in %s", time.Since(start).Round(time.Millisecond))

	s.expect(20*time.Second, tcp(w.web, fc, 80, false))
	s.keepChecking(6*time.Second, nil, nil, append(w.enforced(), tcp(w.web, fc, 80, false))...)
	if err := w.other.SetLabels(s.ctx, map[string]string{"role": "client"}); err != nil {
		t.Fatal(err)
	}
	s.expect(20*time.Second, tcp(w.other, w.web, 80, true))
	late := s.workload(s.Host(1), "late", map[string]string{"role": "client"}, 80)
	s.expect(20*time.Second, tcp(late, w.web, 80, true), tcp(w.client, late, 80, true))
	for p, pid := range pids {
		if p.Pid() != pid || !p.Running() {
			t.Errorf("%s: pid %d -> %d, running %v:\n%s", p.Name, pid, p.Pid(), p.Running(), p.LogTail(1500))
		}
	}
	for _, h := range s.Hosts {
		if err := h.FelixReady(s.ctx); err != nil {
			t.Error(err)
		}
		if err := h.WaitBGPEstablished(s.ctx, 1); err != nil {
			t.Error(err)
		}
	}
}
