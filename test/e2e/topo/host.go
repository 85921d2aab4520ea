package topo

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Host is one simulated machine: a namespace whose eth0 sits on the fabric bridge, with its own
// configuration files, state directory and daemons.
type Host struct {
	NS    *Netns
	f     *Fabric
	Index int
	Name  string     // Node name, "host-<i>"
	Addr  netip.Addr // invalid with Options.IPv6Only
	Addr6 netip.Addr // valid with Options.IPv6
	Dir   string     // configs, state, BIRD socket
	Logs  string     // log directory

	// ProjectCalico: the host stands for Project Calico's calico-node (Options.ProjectCalico).
	ProjectCalico bool
	pc            *projectCalico // its simulated calico-node, once started

	// Daemons, set by the Start* methods.
	Startup, Confd, Bird, Felix *Proc
	// FelixEnv is added to felix's environment (set before StartFelix), e.g.
	// "FELIX_ENDPOINTREPORTINGENABLED=true".
	FelixEnv []string
	// Region is felix's OpenstackRegion (set with SetOpenStackRegion before felix starts).
	Region string

	mu        sync.Mutex
	workloads map[string]*Workload
}

// newHost creates host i's namespace, plugs it into the bridge and writes its configuration.
func newHost(ctx context.Context, f *Fabric, i int) (*Host, error) {
	h := &Host{f: f, Index: i, Name: fmt.Sprintf("host-%d", i), workloads: map[string]*Workload{}}
	if !f.Opts.IPv6Only {
		h.Addr = netip.AddrFrom4([4]byte{198, 18, 0, byte(i)})
	}
	if f.Opts.IPv6 {
		h.Addr6 = netip.MustParseAddr(fmt.Sprintf("fd5c:ff::%x", i))
	}
	h.ProjectCalico = slices.Contains(f.Opts.ProjectCalico, i)
	h.Dir = filepath.Join(f.Dir, "hosts", h.Name)
	h.Logs = filepath.Join(f.LogDir(), h.Name)
	for _, d := range []string{h.Dir, h.Logs, filepath.Join(h.Dir, "bird"), filepath.Join(h.Dir, "conf.d"), filepath.Join(h.Dir, "secrets")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	var err error
	if h.NS, err = f.newNetns(ctx, fmt.Sprintf("h%d", i)); err != nil {
		return nil, err
	}
	port := fmt.Sprintf("veth-h%d", i)
	if _, err := run(ctx, nil, "ip", "-n", h.NS.Name, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", f.NS.Name); err != nil {
		return nil, err
	}
	if err := f.NS.script(ctx, "link set "+port+" master br0 up"); err != nil {
		return nil, err
	}
	lines := []string{"link set eth0 up"}
	if h.Addr.IsValid() {
		lines = append(lines, "addr add "+h.Addr.String()+"/24 dev eth0", "route add default via "+FabricAddr.String())
	}
	if h.Addr6.IsValid() {
		lines = append(lines, "-6 addr add "+h.Addr6.String()+"/64 dev eth0 nodad", "-6 route add default via "+FabricAddr6.String())
	}
	if err := h.NS.script(ctx, lines...); err != nil {
		return nil, err
	}
	// What the host's OS configuration does on a router: forward packets (felix only sets the
	// per-interface switches of workload interfaces).
	if _, err := h.Exec(ctx, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"); err != nil {
		return nil, err
	}
	return h, h.writeConfigs()
}

// SetOpenStackRegion makes felix run with OpenstackRegion = region (an operator's felix.cfg);
// call it before felix starts.
func (h *Host) SetOpenStackRegion(region string) {
	h.Region = region
	h.FelixEnv = append(h.FelixEnv, "FELIX_OPENSTACKREGION="+region)
}

// Exec runs a command in the host's namespace and returns its combined output.
func (h *Host) Exec(ctx context.Context, args ...string) (string, error) {
	return h.NS.Exec(ctx, args...)
}

// path is a file in the host's directory.
func (h *Host) path(name string) string { return filepath.Join(h.Dir, name) }

// ConfigPath returns the path of one of the host's config files: node.toml, datastore.toml,
// confd.toml, felix.toml.
func (h *Host) ConfigPath(name string) string { return h.path(name) }

// BirdSocket is the control socket of the host's BIRD.
func (h *Host) BirdSocket() string { return h.path("bird.ctl") }

// env is what every daemon of the host gets: the datastore and a plain log format.
func (h *Host) env() []string {
	return []string{"ETCD_ENDPOINTS=" + h.f.Etcd.EndpointList(), "NOTIFY_SOCKET=", "WATCHDOG_USEC="}
}

// writeConfigs writes node.toml, datastore.toml, confd.toml and felix.toml.
func (h *Host) writeConfigs() error {
	files := map[string]string{
		"datastore.toml": fmt.Sprintf("[etcd]\nendpoints = [%s]\n", quoteList(h.f.Etcd.Endpoints)),
		"node.toml":      h.nodeTOML(),
		"confd.toml":     h.confdTOML(),
		"felix.toml":     h.felixTOML(),
	}
	for name, content := range files {
		if err := os.WriteFile(h.path(name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

func (h *Host) nodeTOML() string {
	backend, vxlan := "bird", "Never"
	if h.f.Opts.Mode == ModeVXLAN {
		backend, vxlan = "vxlan", "Always"
	}
	ip, pool4, ip6, pool6 := h.Addr.String()+"/24", PoolV4.String(), "none", "none"
	if h.f.Opts.IPv6Only {
		ip, pool4 = "none", "none"
	}
	if h.f.Opts.IPv6 {
		ip6, pool6 = h.Addr6.String()+"/64", PoolV6.String()
	}
	return fmt.Sprintf(`nodename = %q
nodename_file = %q
networking_backend = %q
ip = %q
ip6 = %q
ipv6_support = %v
autodetect_poll_interval = "10s"

[ipv4_pool]
cidr = %q
block_size = 26
vxlan_mode = %q
nat_outgoing = true

[ipv6_pool]
cidr = %q
block_size = 122
vxlan_mode = %q
`, h.Name, h.path("nodename"), backend, ip, ip6, h.f.Opts.IPv6, pool4, vxlan, pool6, vxlan)
}

func (h *Host) confdTOML() string {
	return fmt.Sprintf(`nodename = %q
nodename_file = %q
templates_dir = %q
conf_dir = %q
output_dir = %q
bird_socket = %q
secrets_dir = %q
debounce = "100ms"
%s
# Short BGP timers so that sessions come up and fail over quickly in tests.
[vars]
connect_delay_time = "1"
connect_retry_time = "1"
error_wait_time = "1,3"
hold_time = "9"
keepalive_time = "3"
`, h.Name, h.path("nodename"), filepath.Join(h.f.Opts.Repo, "etc/calico/confd/templates"), h.path("conf.d"),
		h.path("bird"), h.BirdSocket(), h.path("secrets"), h.routerIDLine())
}

// routerIDLine: an IPv6-only host has no IPv4 address to be BIRD's router id, so it uses one
// derived from its name (Project Calico's CALICO_ROUTER_ID=hash, required there too).
func (h *Host) routerIDLine() string {
	if h.f.Opts.IPv6Only {
		return "router_id = \"hash\"\n"
	}
	return ""
}

// Felix listens for health and metrics on the host namespace's loopback only.
const (
	FelixHealthAddr  = "127.0.0.1:9099"
	FelixMetricsAddr = "127.0.0.1:9091"
)

func (h *Host) felixTOML() string {
	conf := fmt.Sprintf(`FelixHostname = %q
LogSeverityScreen = "Info"
HealthEnabled = true
HealthHost = "127.0.0.1"
HealthPort = 9099
PrometheusMetricsEnabled = true
PrometheusMetricsHost = "127.0.0.1"
PrometheusMetricsPort = 9091
IPv6Support = %v
`, h.Name, h.f.Opts.IPv6)
	if flush := h.f.Opts.FlowLogsFlush; flush > 0 {
		conf += fmt.Sprintf("FlowLogsFileEnabled = true\nFlowLogsFileDirectory = %q\nFlowLogsFlushInterval = \"%d\"\n",
			filepath.Dir(h.FlowLogFile()), int(flush.Seconds()))
	}
	return conf
}

// FlowLogFile is where felix writes the host's flow log with Options.FlowLogsFlush.
func (h *Host) FlowLogFile() string { return h.path(filepath.Join("flowlogs", "flows.log")) }

// Workloads returns the host's workloads, by name.
func (h *Host) Workloads() []*Workload {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*Workload
	for _, w := range h.workloads {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
