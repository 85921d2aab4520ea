package calcbench

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// Shape constants.
const (
	Namespaces       = 10 // ns-0 ... ns-9
	EndpointsPerHost = 50 // remote endpoints per remote host (node-0, node-1, ...)
	EndpointsPerApp  = 100
	blockSize        = 64 // addresses per /26 block
)

// Roles are the values of the "role" label, assigned round-robin.
var Roles = []string{"web", "api", "db", "cache", "client"}

// Shape is the size of a generated datastore.
type Shape struct {
	Host                             string // the local host
	Local, Remote, Policies, NetSets int
	// PerHost is the number of workload endpoints of each remote host (default EndpointsPerHost).
	PerHost int
}

// perHost is the number of endpoints of each remote host.
func (s Shape) perHost() int {
	if s.PerHost > 0 {
		return s.PerHost
	}
	return EndpointsPerHost
}

// RemoteHost is the name of remote host number i (0-based).
func RemoteHost(i int) string { return fmt.Sprintf("node-%d", i) }

// BenchData returns the updates of a datastore with `local` workload endpoints on host,
// `remote` workload endpoints on other hosts (EndpointsPerHost each, or Shape.PerHost), `policies` policies and
// `netsets` network sets, plus the profiles, tiers, nodes, host endpoints, pools, blocks and
// configuration that go with them. Workload addresses come from 10.65.4.0-10.65.255.255 (then
// fd5c::/16), tunnel addresses from 10.65.0.0/22 and host addresses from 198.18.0.0/15.
// Revisions are 1..n and the result is deterministic.
func BenchData(host string, local, remote, policies, netsets int) []syncer.Update {
	return Shape{Host: host, Local: local, Remote: remote, Policies: policies, NetSets: netsets}.Updates()
}

// Updates generates the datastore.
func (s Shape) Updates() []syncer.Update {
	b := &builder{s: s}
	b.cluster()
	hosts := []string{s.Host}
	for i := 0; i < s.remoteHosts(); i++ {
		hosts = append(hosts, RemoteHost(i))
	}
	for i, h := range hosts {
		b.node(h, i)
	}
	seq := 0
	b.endpoints(s.Host, s.Local, &seq)
	for i := 0; i < s.Remote; i += s.perHost() {
		b.endpoints(hosts[1+i/s.perHost()], min(s.perHost(), s.Remote-i), &seq)
	}
	for i := 0; i < s.Policies; i++ {
		b.policy(i)
	}
	for i := 0; i < s.NetSets; i++ {
		b.netset(i)
	}
	return b.ups
}

func (s Shape) remoteHosts() int { return (s.Remote + s.perHost() - 1) / s.perHost() }

// Apps is the number of distinct "app" labels: one per EndpointsPerApp endpoints, at least 10.
func (s Shape) Apps() int { return max(10, (s.Local+s.Remote)/EndpointsPerApp) }

// SecurityGroups is the number of distinct sg-<n> labels (one per two apps).
func (s Shape) SecurityGroups() int { return max(5, s.Apps()/2) }

// LocalEndpoint returns the i-th local workload endpoint with another role label, for
// label-change benchmarks.
func (s Shape) LocalEndpoint(i int, role string) syncer.Update {
	b := &builder{s: s}
	return b.addWorkload(b.workload(s.Host, i, i, role))
}

// RemoteEndpoint returns the j-th remote workload endpoint with another role label.
func (s Shape) RemoteEndpoint(j int, role string) syncer.Update {
	b := &builder{s: s}
	n := s.perHost()
	seq := roundUp(s.Local) + j/n*roundUp(n) + j%n
	return b.addWorkload(b.workload(RemoteHost(j/n), j%n, seq, role))
}

// roundUp rounds n up to a whole number of blocks.
func roundUp(n int) int { return (n + blockSize - 1) / blockSize * blockSize }

type builder struct {
	s   Shape
	ups []syncer.Update
}

func (b *builder) add(ns, name string, v api.Resource) syncer.Update {
	m := v.GetObjectMeta()
	m.Name, m.Namespace = name, ns
	k, _ := api.KindOf(v)
	*v.GetTypeMeta() = api.TypeMeta{Kind: k.Kind, APIVersion: api.APIVersion}
	api.SetDefaults(v)
	u := syncer.Update{ID: datastore.NewResourceID(k, ns, name), Value: v, Revision: int64(len(b.ups) + 1)}
	b.ups = append(b.ups, u)
	return u
}

func (b *builder) addWorkload(w *api.WorkloadEndpoint) syncer.Update {
	return b.add(w.Namespace, w.Name, w)
}

func meta(labels map[string]string) api.ObjectMeta { return api.ObjectMeta{Labels: labels} }

// cluster adds the cluster-wide objects: configuration, tiers, pools and profiles.
func (b *builder) cluster() {
	b.add("", "default", &api.ClusterInformation{Spec: api.ClusterInformationSpec{
		ClusterGUID: "bench", ClusterType: "bare-metal", CalicoVersion: "v3.30.0", DatastoreReady: api.Bool(true)}})
	b.add("", "default", &api.FelixConfiguration{Spec: api.FelixConfigurationSpec{
		InterfacePrefix: "cali,tap", ReportingInterval: api.Dur(30 * time.Second), NFTablesMode: api.Str("Enabled"),
		FailsafeInboundHostPorts: &[]api.ProtoPort{{Protocol: "TCP", Port: 22}, {Protocol: "UDP", Port: 68}}}})
	b.add("", "node."+b.s.Host, &api.FelixConfiguration{Spec: api.FelixConfigurationSpec{
		DefaultEndpointToHostAction: "Return"}})
	b.add("", "default", &api.Tier{Spec: api.TierSpec{Order: api.Float(1e6), DefaultAction: "Deny"}})
	b.add("", "security", &api.Tier{Spec: api.TierSpec{Order: api.Float(100), DefaultAction: "Pass"}})
	b.add("", "bench-v4", &api.IPPool{Spec: api.IPPoolSpec{CIDR: "10.65.0.0/16", VXLANMode: "CrossSubnet", NATOutgoing: true}})
	b.add("", "bench-v6", &api.IPPool{Spec: api.IPPoolSpec{CIDR: "fd5c::/16"}})
	b.add("", "net1", &api.Profile{Spec: api.ProfileSpec{LabelsToApply: map[string]string{"net1": ""},
		Ingress: []api.Rule{{Action: "Allow", Source: api.EntityRule{Selector: "has(net1)"}}},
		Egress:  []api.Rule{{Action: "Allow"}}}})
	for i := 0; i < Namespaces; i++ {
		b.add("", fmt.Sprintf("kns.ns-%d", i), &api.Profile{Spec: api.ProfileSpec{
			LabelsToApply: map[string]string{"pcns.team": fmt.Sprintf("team-%d", i%3)}}})
	}
}

// node adds host number i with its address, tunnel address and host endpoint.
func (b *builder) node(name string, i int) {
	ip := fmt.Sprintf("198.18.%d.%d", i/250, 1+i%250)
	rack := fmt.Sprintf("r%d", i%8)
	b.add("", name, &api.Node{ObjectMeta: meta(map[string]string{"rack": rack}),
		Spec: api.NodeSpec{BGP: &api.NodeBGPSpec{IPv4Address: ip + "/16"}, IPv4VXLANTunnelAddr: tunnelAddr(i)}})
	b.add("", name+"-eth0", &api.HostEndpoint{ObjectMeta: meta(map[string]string{"host-endpoint": "true", "rack": rack}),
		Spec: api.HostEndpointSpec{Node: name, InterfaceName: "eth0", ExpectedIPs: []string{ip}}})
}

// tunnelAddr is the VXLAN tunnel address of host i: 10.65.0.0/22 holds the first 1023 hosts
// (the others get none).
func tunnelAddr(i int) string {
	if i >= 1023 {
		return ""
	}
	return fmt.Sprintf("10.65.%d.%d", (i+1)/256, (i+1)%256)
}

// workload builds the i-th workload of host, number seq overall: app seq%Apps (which decides its
// namespace and security group), role as given, env alternating per app.
func (b *builder) workload(host string, i, seq int, role string) *api.WorkloadEndpoint {
	app := seq % b.s.Apps()
	ns := fmt.Sprintf("ns-%d", app%Namespaces)
	ctr := fmt.Sprintf("c%06d", i)
	labels := map[string]string{"app": fmt.Sprintf("app-%d", app), "role": role,
		"env": []string{"prod", "dev"}[seq/b.s.Apps()%2], fmt.Sprintf("sg-%d", app%b.s.SecurityGroups()): ""}
	w := &api.WorkloadEndpoint{ObjectMeta: api.ObjectMeta{Name: api.WorkloadEndpointName(host, "cni", ctr, "eth0"), Namespace: ns, Labels: labels},
		Spec: api.WorkloadEndpointSpec{Orchestrator: "cni", Node: host, Workload: ctr, ContainerID: ctr, Endpoint: "eth0",
			InterfaceName: fmt.Sprintf("cali%011d", seq), IPNetworks: []string{workloadAddr(seq)}, Profiles: []string{"net1"},
			ServiceAccountName: fmt.Sprintf("sa-%d", seq%7)}}
	if role == "web" {
		w.Spec.Ports = []api.WorkloadEndpointPort{{Name: "http", Protocol: api.ProtocolFromString("TCP"), Port: 8080}}
	}
	return w
}

// workloadAddr is the address of workload number seq: 10.65.4.0-10.65.255.255, then fd5c::/16.
func workloadAddr(seq int) string {
	if seq < 65536-4*256 {
		return fmt.Sprintf("10.65.%d.%d/32", 4+seq/256, seq%256)
	}
	return fmt.Sprintf("fd5c::%x:%x/128", seq>>16, seq&0xffff)
}

// endpoints adds count workloads on host, with overall numbers from *seq (rounded up to a block,
// so each host has its own blocks), and the IPAM blocks that hold them.
func (b *builder) endpoints(host string, count int, seq *int) {
	*seq = roundUp(*seq)
	for i := 0; i < count; i++ {
		b.addWorkload(b.workload(host, i, *seq, Roles[*seq%len(Roles)]))
		if *seq%blockSize == 0 {
			b.block(host, *seq)
		}
		*seq++
	}
}

// block adds the IPAM block holding address seq, affine to host.
func (b *builder) block(host string, seq int) {
	a := netip.MustParsePrefix(workloadAddr(seq)).Addr()
	bits := 26
	if a.Is6() {
		bits = 122
	}
	cidr := netip.PrefixFrom(a, bits).Masked()
	aff := "host:" + host
	blk := &api.AllocationBlock{CIDR: cidr.String(), Affinity: &aff, Allocations: make([]*int, 1<<(a.BitLen()-bits))}
	b.ups = append(b.ups, syncer.Update{ID: datastore.BlockID{CIDR: cidr}, Value: blk, Revision: int64(len(b.ups) + 1)})
}

// Encode is a generated value as Project Calico's tools store it in etcd (a resource with its
// kind, API version and a creation timestamp).
func Encode(v any) ([]byte, error) {
	if r, ok := v.(api.Resource); ok {
		if r.GetObjectMeta().CreationTimestamp == "" {
			r.GetObjectMeta().CreationTimestamp = "2026-01-01T00:00:00Z"
		}
		if k, ok := api.KindOf(r); ok {
			*r.GetTypeMeta() = api.TypeMeta{Kind: k.Kind, APIVersion: api.APIVersion}
		}
		return datastore.EncodeResource(r)
	}
	return json.Marshal(v)
}
