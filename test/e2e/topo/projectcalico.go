package topo

// A "Project Calico host" is a host of the fabric that stands for a node running Project
// Calico's calico-node container, which cannot run here (no container runtime) and whose code
// CI does not build. What calico-node does that the other hosts can see is reproduced from facts
// read in Project Calico's source (projectcalico/calico, v3 series):
//
//   - its startup registers the Node as node/pkg/lifecycle/startup does in etcd mode: spec.bgp
//     with the host's addresses (also with the VXLAN backend), spec.interfaces (every address
//     of the IP versions in use, link-local ones included), an empty status,
//     no labels and no vxlanTunnelMACAddr (only the Windows CNI plugin writes that), and writes
//     the node name to the nodename file (utils.WriteNodeConfig);
//   - its tunnel-address allocator (node/pkg/allocateip) gives the Node a VXLAN tunnel address per
//     family from a VXLAN pool: IPAM handle "vxlan-tunnel-addr-<node>" (IPv6
//     "vxlan-v6-tunnel-addr-<node>"), attributes node and type vxlanTunnelAddress
//     (vxlanV6TunnelAddress), intended use Tunnel;
//   - in BGP mode its confd renders BIRD 1.6 configurations (bird.cfg and bird6.cfg with their
//     _aggr and _ipam includes), written here by pcbird.go, and runs bird and bird6;
//   - in VXLAN mode its felix programs the VXLAN devices, the neighbour, FDB and route entries
//     of every remote VTEP and blackholes for its own blocks (pcvxlan.go).
//
// The host's workloads are plugged in by our CNI plugin, which writes what Project Calico's
// plugin writes (WorkloadEndpoint, IPAM block, affinity and handle). No policy is enforced on a
// Project Calico host (its felix does not run): policy is enforced by the calico-host hosts.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/ipam"
)

// projectCalico runs the simulated calico-node of one host: a loop that re-reads the datastore
// and re-renders BIRD 1.6's configuration (BGP mode) or reprograms the VXLAN state (VXLAN mode)
// whenever what it depends on changes, as confd and felix do.
type projectCalico struct {
	h     *Host
	logf  *os.File
	birds map[int]*Proc // BIRD 1.6 per IP version (bird, bird6), BGP mode
	// applied is what the last successful sync wrote, by file or kernel object.
	applied map[string]string

	cancel func()
	done   chan struct{}

	mu      sync.Mutex
	synced  bool
	lastErr error
}

// projectCalicoState reports whether the host's simulated calico-node has completed a sync,
// and its last sync's error.
func (h *Host) projectCalicoState() (bool, error) {
	if h.pc == nil {
		return false, fmt.Errorf("%s is not a Project Calico host", h.Name)
	}
	h.pc.mu.Lock()
	defer h.pc.mu.Unlock()
	return h.pc.synced, h.pc.lastErr
}

// StartProjectCalico starts the host's simulated calico-node (again, after StopProjectCalico or
// instead of calico-host: a rollback) and waits for its first sync and, in BGP mode, for BIRD
// 1.6's sessions with every other host.
func (h *Host) StartProjectCalico(ctx context.Context) error {
	return h.startProjectCalico(ctx, h.f.meshSessions())
}

// startProjectCalico registers the host as calico-node does and starts its loop; in BGP mode it
// waits until BIRD 1.6 has `sessions` established sessions in all.
func (h *Host) startProjectCalico(ctx context.Context, sessions int) error {
	if h.f.Opts.IPv6Only {
		return fmt.Errorf("%s: a Project Calico host needs an IPv4 router id (CALICO_ROUTER_ID=hash is not simulated)", h.Name)
	}
	logf, err := os.OpenFile(filepath.Join(h.Logs, "projectcalico.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	pc := &projectCalico{h: h, logf: logf, birds: map[int]*Proc{}, applied: map[string]string{}}
	h.pc = pc
	if err := pc.registerNode(ctx); err != nil {
		return fmt.Errorf("%s: registering the Node as calico-node: %w", h.Name, err)
	}
	if h.f.Opts.Mode == ModeVXLAN {
		if err := pc.allocateTunnelAddrs(ctx); err != nil {
			return fmt.Errorf("%s: tunnel addresses as calico-node: %w", h.Name, err)
		}
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	pc.cancel, pc.done = cancel, make(chan struct{})
	h.f.undo.push(func() { cancel(); <-pc.done; logf.Close() })
	go pc.loop(loopCtx, pc.done)
	if err := Eventually(ctx, 30*time.Second, 100*time.Millisecond, func() error {
		ok, err := h.projectCalicoState()
		if !ok && err == nil {
			err = fmt.Errorf("no sync yet")
		}
		return err
	}); err != nil {
		return fmt.Errorf("%s: first sync of the simulated calico-node: %w", h.Name, err)
	}
	if h.f.Opts.Mode == ModeBGP {
		return h.WaitBird16Established(ctx, sessions)
	}
	return nil
}

// registerNode writes the Node as calico-node's startup writes it on a fresh etcd (compare
// /work/shared/fixtures/startup-result.json): bgp addresses with their prefix length, the
// interfaces list, an empty status.
func (pc *projectCalico) registerNode(ctx context.Context) error {
	h := pc.h
	ds, err := h.f.Datastore()
	if err != nil {
		return err
	}
	bgp := map[string]any{}
	if h.Addr.IsValid() {
		bgp["ipv4Address"] = h.Addr.String() + "/24"
	}
	if h.Addr6.IsValid() {
		bgp["ipv6Address"] = h.Addr6.String() + "/64"
	}
	addrs, err := h.interfaceAddrs(ctx, "eth0")
	if err != nil {
		return err
	}
	node := map[string]any{
		"kind": "Node", "apiVersion": api.APIVersion,
		"metadata": map[string]any{"name": h.Name, "uid": uuid.NewString(),
			"creationTimestamp": time.Now().UTC().Format(time.RFC3339)},
		"spec":   map[string]any{"bgp": bgp, "interfaces": []map[string]any{{"name": "eth0", "addresses": addrs}}},
		"status": map[string]any{},
	}
	value, err := json.Marshal(node)
	if err != nil {
		return err
	}
	kind, _ := api.LookupKind("Node")
	// An existing Node (a host going back to calico-node) is kept: its addresses are the ones
	// calico-node would detect here.
	if _, err = ds.CreateKV(ctx, datastore.ResourceKey(kind, "", h.Name), value); err != nil && !datastore.IsAlreadyExists(err) {
		return err
	}
	// calico-node also records its name in /var/lib/calico/nodename (no newline), which the host
	// mounts: the file calico-startup reads when node.toml names no node.
	return os.WriteFile(h.path("nodename"), []byte(h.Name), 0o644)
}

// interfaceAddrs lists an interface's addresses of the host's IP versions in the kernel's
// order, link-local ones included, as calico-node's autodetection.GetInterfaces reports them.
func (h *Host) interfaceAddrs(ctx context.Context, dev string) ([]string, error) {
	var ifs []struct {
		AddrInfo []struct {
			Family string `json:"family"`
			Local  string `json:"local"`
		} `json:"addr_info"`
	}
	if err := h.execJSON(ctx, &ifs, "ip", "-j", "addr", "show", "dev", dev); err != nil {
		return nil, err
	}
	var out []string
	for _, i := range ifs {
		for _, a := range i.AddrInfo {
			if a.Family == "inet" && h.Addr.IsValid() || a.Family == "inet6" && h.Addr6.IsValid() {
				out = append(out, a.Local)
			}
		}
	}
	return out, nil
}

// allocateTunnelAddrs gives the Node a VXLAN tunnel address per family with a VXLAN pool, as
// calico-node's allocateip does, and records it on the Node.
func (pc *projectCalico) allocateTunnelAddrs(ctx context.Context) error {
	ds, err := pc.h.f.Datastore()
	if err != nil {
		return err
	}
	pools, _, err := datastore.ListAs[*api.IPPool](ctx, ds, "")
	if err != nil {
		return err
	}
	node, err := datastore.GetAs[*api.Node](ctx, ds, "", pc.h.Name)
	if err != nil {
		return err
	}
	cli := ipam.New(ds, zerolog.Nop())
	for _, fam := range pc.h.f.Families() {
		cidrs := vxlanPools(pools, fam)
		if len(cidrs) == 0 || tunnelAddr(node, fam).IsValid() {
			continue // allocateip keeps an address it finds allocated to this node's tunnel
		}
		args := ipam.AutoAssignArgs{Hostname: pc.h.Name, IntendedUse: api.UseTunnel,
			HandleID: "vxlan-tunnel-addr-" + pc.h.Name, Attrs: map[string]string{"node": pc.h.Name, "type": "vxlanTunnelAddress"}}
		if fam == 4 {
			args.Num4, args.IPv4Pools = 1, cidrs
		} else {
			args.Num6, args.IPv6Pools = 1, cidrs
			args.HandleID, args.Attrs["type"] = "vxlan-v6-tunnel-addr-"+pc.h.Name, "vxlanV6TunnelAddress"
		}
		v4, v6, err := cli.AutoAssign(ctx, args)
		if err != nil {
			return fmt.Errorf("IPv%d tunnel address: %w", fam, err)
		}
		if err := pc.setTunnelAddr(ctx, append(v4, v6...)[0].Addr()); err != nil {
			return err
		}
	}
	return nil
}

func (pc *projectCalico) setTunnelAddr(ctx context.Context, addr netip.Addr) error {
	ds, err := pc.h.f.Datastore()
	if err != nil {
		return err
	}
	return retryConflicts(func() error {
		node, err := datastore.GetAs[*api.Node](ctx, ds, "", pc.h.Name)
		if err != nil {
			return err
		}
		if addr.Is4() {
			node.Spec.IPv4VXLANTunnelAddr = addr.String()
		} else {
			node.Spec.IPv6VXLANTunnelAddr = addr.String()
		}
		_, err = ds.Update(ctx, node)
		return err
	})
}

// vxlanPools are the CIDRs of the enabled pools of a family with vxlanMode Always or CrossSubnet.
func vxlanPools(pools []*api.IPPool, fam int) []string {
	var out []string
	for _, p := range pools {
		cidr, err := netip.ParsePrefix(p.Spec.CIDR)
		if err != nil || cidr.Addr().Is4() != (fam == 4) || p.Spec.Disabled {
			continue
		}
		if p.Spec.VXLANMode == "Always" || p.Spec.VXLANMode == "CrossSubnet" {
			out = append(out, cidr.String())
		}
	}
	return out
}

// loop syncs every 300 ms until ctx ends (confd and felix react to watches; polling is enough
// for a test and keeps this simple).
func (pc *projectCalico) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		err := pc.sync(ctx)
		if err != nil && ctx.Err() == nil {
			fmt.Fprintf(pc.logf, "%s sync: %v\n", time.Now().Format(time.RFC3339Nano), err)
		}
		pc.mu.Lock()
		pc.lastErr = err
		pc.synced = pc.synced || err == nil
		pc.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func (pc *projectCalico) sync(ctx context.Context) error {
	st, err := pc.readState(ctx)
	if err != nil {
		return err
	}
	if pc.h.f.Opts.Mode == ModeVXLAN {
		return pc.syncVXLAN(ctx, st)
	}
	return pc.syncBIRD(ctx, st)
}

// logChange records one applied change in the host's projectcalico.log.
func (pc *projectCalico) logChange(what string) {
	fmt.Fprintf(pc.logf, "%s %s\n", time.Now().Format(time.RFC3339Nano), what)
}

// StopProjectCalico stops the host's simulated calico-node as `systemctl stop` of its container
// would: the loop ends and BIRD 1.6 stops (its kernel routes stay: "persist"); the VXLAN device
// and entries its felix programmed stay too.
func (h *Host) StopProjectCalico() {
	if h.pc == nil {
		return
	}
	h.pc.cancel()
	<-h.pc.done
	for _, p := range h.pc.birds {
		p.Stop()
	}
}

// StopCalicoHost stops the host's calico-host daemons (felix, BIRD, confd, startup), as
// `systemctl stop calico.target`; what they programmed stays in the kernel.
func (h *Host) StopCalicoHost() {
	for _, p := range []*Proc{h.Felix, h.Bird, h.Confd, h.Startup} {
		if p != nil {
			p.Stop()
		}
	}
}
