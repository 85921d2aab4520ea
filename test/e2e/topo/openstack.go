package topo

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/calico-host/calico-host/pkg/api"
)

// OpenStack: what networking-calico (the Neutron driver) and Nova do, reproduced from
// reference/openstack-contract.md. Nova creates a tap interface per VM port; the driver writes
// WorkloadEndpoints and "ossg." NetworkPolicies into etcd as raw JSON with create-only
// transactions; felix enforces them and reports port status under /calico/felix/v2/.

// OpenStackNamespace is the WorkloadEndpoint and policy namespace without a region.
const OpenStackNamespace = "openstack"

// VM is an instance's port on a host: a namespace behind a tap interface.
type VM struct {
	NS       *Netns
	Host     *Host
	Name     string // instance name
	DeviceID string // Nova instance UUID
	PortID   string // Neutron port UUID
	Tap      string // "tap" + PortID[:11]
	MAC      string
	IP       netip.Addr
	WEPName  string
}

var vmSeq atomic.Int64

// VMSubnet is the Neutron subnet the VMs are on; its gateway is answered by proxy ARP.
var (
	VMSubnet  = netip.MustParsePrefix("10.65.250.0/24")
	VMGateway = netip.MustParseAddr("10.65.250.1")
)

// AddVM plugs a VM in as Nova does (a tap interface, the VM configured by DHCP in real life,
// statically here) and writes its WorkloadEndpoint as networking-calico does, with the given
// security groups (id -> name).
func (h *Host) AddVM(ctx context.Context, name string, ip netip.Addr, sgs map[string]string) (*VM, error) {
	vm := &VM{Host: h, Name: name, DeviceID: uuid.NewString(), PortID: uuid.NewString(), IP: ip}
	vm.Tap = "tap" + vm.PortID[:11]
	mac := make([]byte, 3)
	rand.Read(mac)
	vm.MAC = fmt.Sprintf("fa:16:3e:%02x:%02x:%02x", mac[0], mac[1], mac[2])
	vm.WEPName = api.WorkloadEndpointName(h.Name, "openstack", vm.DeviceID, vm.PortID)
	var err error
	if vm.NS, err = h.f.newNetns(ctx, fmt.Sprintf("h%dvm%d", h.Index, vmSeq.Add(1))); err != nil {
		return nil, err
	}
	if err := vm.plug(ctx); err != nil {
		return nil, err
	}
	return vm, vm.writeEndpoint(ctx, sgs)
}

// plug creates the tap (a veth whose far end is the VM's eth0) and configures the VM.
func (vm *VM) plug(ctx context.Context) error {
	if _, err := run(ctx, nil, "ip", "-n", vm.Host.NS.Name, "link", "add", vm.Tap, "type", "veth", "peer", "name", "eth0", "netns", vm.NS.Name); err != nil {
		return err
	}
	// Nova gives the host side the port MAC with "fe" as first byte (vif_details mac_address).
	if err := vm.Host.NS.script(ctx, "link set "+vm.Tap+" address fe"+vm.MAC[2:], "link set "+vm.Tap+" up"); err != nil {
		return err
	}
	return vm.NS.script(ctx, "link set eth0 address "+vm.MAC,
		fmt.Sprintf("addr add %s/%d dev eth0", vm.IP, VMSubnet.Bits()), "link set eth0 up",
		"route add default via "+VMGateway.String())
}

// writeEndpoint writes the WorkloadEndpoint exactly as networking-calico's endpoint_spec does.
func (vm *VM) writeEndpoint(ctx context.Context, sgs map[string]string) error {
	labels := map[string]string{
		"projectcalico.org/namespace":              OpenStackNamespace,
		"projectcalico.org/orchestrator":           "openstack",
		"projectcalico.org/openstack-project-id":   "d1c5d8ea8b5b4a5f9f6e0b1d2c3a4b5c",
		"projectcalico.org/openstack-network-name": "demo-net",
	}
	for id, name := range sgs {
		labels["sg.projectcalico.org/openstack-"+id] = name
		if name != "" {
			labels["sg-name.projectcalico.org/openstack-"+name] = id
		}
	}
	obj := map[string]any{
		"kind": "WorkloadEndpoint", "apiVersion": "projectcalico.org/v3",
		"metadata": osMeta(vm.WEPName, labels, map[string]string{"openstack.projectcalico.org/network-id": "7a1e6f5c-0000-4000-8000-00000000beef"}),
		"spec": map[string]any{
			"orchestrator": "openstack", "workload": vm.Name, "node": vm.Host.Name, "endpoint": vm.PortID,
			"interfaceName": vm.Tap, "mac": vm.MAC, "ipNetworks": []string{vm.IP.String() + "/32"},
			"allowedIps": []string{}, "ipv4Gateway": VMGateway.String(),
		},
	}
	return vm.Host.f.putCreate(ctx, "workloadendpoints/"+OpenStackNamespace+"/"+vm.WEPName, obj)
}

func osMeta(name string, labels, annotations map[string]string) map[string]any {
	m := map[string]any{"name": name, "namespace": OpenStackNamespace, "uid": uuid.NewString(),
		"creationTimestamp": time.Now().UTC().Format("2006-01-02T15:04:05Z")}
	if labels != nil {
		m["labels"] = labels
	}
	if annotations != nil {
		m["annotations"] = annotations
	}
	return m
}

// putCreate writes a v3 object under /calico/resources/v3/projectcalico.org/<rest> with a
// create-only transaction (as networking-calico does).
func (f *Fabric) putCreate(ctx context.Context, rest string, obj any) error {
	ds, err := f.Datastore()
	if err != nil {
		return err
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	key := "/calico/resources/v3/projectcalico.org/" + rest
	resp, err := ds.Etcd().Txn(ctx).If(clientv3.Compare(clientv3.Version(key), "=", 0)).Then(clientv3.OpPut(key, string(data))).Commit()
	if err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("writing %s: it already exists", key)
	}
	return nil
}

// SGRule is one Neutron security group rule, already translated as networking-calico's
// policy.py does (protocol as Neutron gives it: a number for tcp/udp, "ICMP" for icmp).
type SGRule struct {
	Direction   string // "ingress" or "egress"
	Protocol    any    // nil (any), 6, 17, "ICMP"
	Port        int    // 0: any
	RemoteGroup string // security group id, or ""
	RemoteCIDR  string
}

// WriteSecurityGroup writes the NetworkPolicy ossg.default.<id> for a security group.
func (f *Fabric) WriteSecurityGroup(ctx context.Context, id string, rules []SGRule) error {
	var in, out []map[string]any
	for _, r := range rules {
		rule := map[string]any{"action": "Allow", "ipVersion": 4}
		if r.Protocol != nil {
			rule["protocol"] = r.Protocol
		}
		remote := map[string]any{}
		if r.RemoteGroup != "" {
			remote["selector"] = fmt.Sprintf("has(sg.projectcalico.org/openstack-%s)", r.RemoteGroup)
		}
		if r.RemoteCIDR != "" {
			remote["nets"] = []string{r.RemoteCIDR}
		}
		dest := map[string]any{}
		if r.Port != 0 {
			dest["ports"] = []int{r.Port}
		}
		if strings.EqualFold(r.Direction, "egress") {
			for k, v := range remote {
				dest[k] = v
			}
			if len(dest) > 0 {
				rule["destination"] = dest
			}
			out = append(out, rule)
			continue
		}
		if len(remote) > 0 {
			rule["source"] = remote
		}
		if len(dest) > 0 {
			rule["destination"] = dest
		}
		in = append(in, rule)
	}
	obj := map[string]any{"kind": "NetworkPolicy", "apiVersion": "projectcalico.org/v3",
		"metadata": osMeta("ossg.default."+id, nil, nil),
		"spec": map[string]any{"selector": fmt.Sprintf("has(sg.projectcalico.org/openstack-%s)", id),
			"ingress": nonNil(in), "egress": nonNil(out)}}
	return f.putCreate(ctx, "networkpolicies/"+OpenStackNamespace+"/ossg.default."+id, obj)
}

func nonNil(r []map[string]any) []map[string]any {
	if r == nil {
		return []map[string]any{}
	}
	return r
}

// PortStatusKey is where felix reports the VM port's status (openstack-contract.md §2):
// /calico/felix/v2/no-region/host/<host>/workload/openstack/<ns>%2f<device>/endpoint/<port>.
func (vm *VM) PortStatusKey() string {
	return fmt.Sprintf("/calico/felix/v2/no-region/host/%s/workload/openstack/%s%%2f%s/endpoint/%s",
		vm.Host.Name, OpenStackNamespace, vm.DeviceID, vm.PortID)
}

// AgentStatusKey is where felix reports its liveness for Neutron.
func (h *Host) AgentStatusKey() string {
	return fmt.Sprintf("/calico/felix/v2/no-region/host/%s/status", h.Name)
}

// GetJSON reads a key and decodes it; found is false when it does not exist.
func (f *Fabric) GetJSON(ctx context.Context, key string, into any) (found bool, err error) {
	ds, err := f.Datastore()
	if err != nil {
		return false, err
	}
	resp, err := ds.Etcd().Get(ctx, key)
	if err != nil || len(resp.Kvs) == 0 {
		return false, err
	}
	return true, json.Unmarshal(resp.Kvs[0].Value, into)
}
