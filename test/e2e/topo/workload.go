package topo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// Workload is a container on a host: a network namespace plumbed by the calico CNI plugin.
type Workload struct {
	NS          *Netns
	Host        *Host
	Name        string // friendly name, e.g. "web-1"
	ContainerID string
	HostIface   string // the host side of the veth, cali<11 chars of the container id>
	IPs         []netip.Addr
	WEPName     string // WorkloadEndpoint name in namespace "default"
}

// WEPNamespace is the namespace of CNI-mode WorkloadEndpoints.
const WEPNamespace = "default"

// CNINetwork is the network name given to the plugin (and the Profile it creates).
const CNINetwork = "calico-net"

var workloadSeq atomic.Int64

// IP returns the workload's address of a family (4 or 6), or an invalid Addr.
func (w *Workload) IP(family int) netip.Addr {
	for _, a := range w.IPs {
		if (family == 4) == a.Is4() {
			return a
		}
	}
	return netip.Addr{}
}

// Exec runs a command in the workload's namespace.
func (w *Workload) Exec(ctx context.Context, args ...string) (string, error) {
	return w.NS.Exec(ctx, args...)
}

// NetConf is the network configuration the host passes to the calico plugin.
func (h *Host) NetConf() map[string]any {
	mtu := 1500
	if h.f.Opts.Mode == ModeVXLAN {
		mtu = 1450
		if h.f.Opts.IPv6Only {
			mtu = 1430 // IPv6 VXLAN's overhead is 70 bytes
		}
	}
	return map[string]any{
		"cniVersion": "1.0.0", "name": CNINetwork, "type": "calico",
		"etcd_endpoints": h.f.Etcd.EndpointList(), "nodename": h.Name, "mtu": mtu,
		"log_level": "info", "log_file_path": filepath.Join(h.Logs, "cni.log"),
		"ipam_lock_file": h.path("ipam.lock"),
		"ipam":           map[string]any{"type": "calico-ipam", "assign_ipv4": fmt.Sprint(!h.f.Opts.IPv6Only), "assign_ipv6": fmt.Sprint(h.f.Opts.IPv6)},
	}
}

// CNI runs the calico plugin in the host's namespace (as a container runtime would) and returns
// its stdout.
func (h *Host) CNI(ctx context.Context, command, containerID, netnsPath string) ([]byte, error) {
	conf, err := json.Marshal(h.NetConf())
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", h.NS.Name, h.bin("calico"))
	cmd.Env = append(os.Environ(), "CNI_COMMAND="+command, "CNI_CONTAINERID="+containerID, "CNI_NETNS="+netnsPath,
		"CNI_IFNAME=eth0", "CNI_PATH="+h.f.Opts.Bin)
	cmd.Stdin = strings.NewReader(string(conf))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s: CNI %s %s: %w: %s %s", h.Name, command, containerID, err, out, stderr.String())
	}
	return out, nil
}

// cniResult is the part of a CNI 1.0 result the harness uses.
type cniResult struct {
	Interfaces []struct {
		Name    string `json:"name"`
		Sandbox string `json:"sandbox"`
	} `json:"interfaces"`
	IPs []struct {
		Address string `json:"address"`
	} `json:"ips"`
}

// NewContainerNetns creates a namespace for a container, as a runtime does before CNI ADD,
// and a fresh container id. Delete it when done (Close deletes it otherwise).
func (h *Host) NewContainerNetns(ctx context.Context) (string, *Netns, error) {
	id := make([]byte, 8)
	rand.Read(id)
	ns, err := h.f.newNetns(ctx, fmt.Sprintf("h%dc%d", h.Index, workloadSeq.Add(1)))
	return hex.EncodeToString(id), ns, err
}

// AddWorkload creates a container namespace, runs CNI ADD for it and sets the WorkloadEndpoint's
// labels (as an orchestrator would).
func (h *Host) AddWorkload(ctx context.Context, name string, labels map[string]string) (*Workload, error) {
	id, ns, err := h.NewContainerNetns(ctx)
	if err != nil {
		return nil, err
	}
	w := &Workload{Host: h, Name: name, ContainerID: id, NS: ns}
	w.WEPName = api.WorkloadEndpointName(h.Name, "cni", w.ContainerID, "eth0")
	out, err := h.CNI(ctx, "ADD", w.ContainerID, w.NS.Path())
	if err != nil {
		return nil, err
	}
	var res cniResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("%s: parsing the CNI result %q: %w", h.Name, out, err)
	}
	for _, ip := range res.IPs {
		p, err := netip.ParsePrefix(ip.Address)
		if err != nil {
			return nil, fmt.Errorf("CNI result address %q: %w", ip.Address, err)
		}
		w.IPs = append(w.IPs, p.Addr())
	}
	for _, i := range res.Interfaces {
		if i.Sandbox == "" {
			w.HostIface = i.Name
		}
	}
	if len(labels) > 0 {
		if err := w.SetLabels(ctx, labels); err != nil {
			return nil, err
		}
	}
	h.mu.Lock()
	h.workloads[name] = w
	h.mu.Unlock()
	return w, nil
}

// SetLabels adds labels to the workload's endpoint.
func (w *Workload) SetLabels(ctx context.Context, labels map[string]string) error {
	ds, err := w.Host.f.Datastore()
	if err != nil {
		return err
	}
	return retryConflicts(func() error {
		wep, err := datastore.GetAs[*api.WorkloadEndpoint](ctx, ds, WEPNamespace, w.WEPName)
		if err != nil {
			return fmt.Errorf("reading workload endpoint %s: %w", w.WEPName, err)
		}
		if wep.Labels == nil {
			wep.Labels = map[string]string{}
		}
		maps.Copy(wep.Labels, labels)
		_, err = ds.Update(ctx, wep)
		return err
	})
}

// Delete runs CNI DEL and removes the container's namespace.
func (w *Workload) Delete(ctx context.Context) error {
	_, err := w.Host.CNI(ctx, "DEL", w.ContainerID, w.NS.Path())
	w.NS.Delete()
	w.Host.mu.Lock()
	delete(w.Host.workloads, w.Name)
	w.Host.mu.Unlock()
	return err
}

// retryConflicts retries fn a few times while it fails with a revision conflict.
func retryConflicts(fn func() error) error {
	var err error
	for range 5 {
		if err = fn(); !datastore.IsConflict(err) {
			return err
		}
	}
	return err
}
