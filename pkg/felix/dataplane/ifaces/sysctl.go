package ifaces

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/vishvananda/netns"
)

// SysctlWriter writes /proc/sys entries of one network namespace. Paths are relative to
// /proc/sys with slashes ("net/ipv4/conf/cali1/proxy_arp"), so interface names with dots work.
type SysctlWriter interface {
	WriteSysctl(path, value string) error
}

// ProcSys is SysctlWriter (and reader) over /proc/sys. /proc/sys/net shows the network namespace
// of the thread that opens a file, so for another namespace every access runs on one dedicated
// OS thread that has joined that namespace (and is discarded, never reused, when ProcSys closes).
type ProcSys struct {
	root string // "/proc/sys"; tests may point it elsewhere

	mu     sync.Mutex
	reqs   chan func()
	closed bool
}

// NewProcSys writes the sysctls of the namespace at nsPath ("" = the current namespace, no thread
// switching).
func NewProcSys(nsPath string) (*ProcSys, error) {
	p := &ProcSys{root: "/proc/sys"}
	if nsPath == "" {
		return p, nil
	}
	ns, err := netns.GetFromPath(nsPath)
	if err != nil {
		return nil, fmt.Errorf("opening network namespace %s: %w", nsPath, err)
	}
	p.reqs = make(chan func())
	ready := make(chan error)
	go p.serve(ns, ready)
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("joining network namespace %s: %w", nsPath, err)
	}
	return p, nil
}

// serve runs requests on a thread locked into ns. The thread is never unlocked: when serve
// returns, the Go runtime terminates it instead of handing it to other goroutines.
func (p *ProcSys) serve(ns netns.NsHandle, ready chan<- error) {
	runtime.LockOSThread()
	err := netns.Set(ns)
	ns.Close()
	ready <- err
	if err != nil {
		return
	}
	for fn := range p.reqs {
		fn()
	}
}

// Close stops the namespace thread. Later writes fail.
func (p *ProcSys) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && p.reqs != nil {
		close(p.reqs)
	}
	p.closed = true
}

// do runs fn in the namespace.
func (p *ProcSys) do(fn func() error) error {
	if p.reqs == nil {
		return fn()
	}
	p.mu.Lock()
	defer p.mu.Unlock() // one request at a time; also keeps Close from racing a send
	if p.closed {
		return errors.New("sysctl writer closed")
	}
	errc := make(chan error, 1)
	p.reqs <- func() { errc <- fn() }
	return <-errc
}

func (p *ProcSys) file(path string) (string, error) {
	clean := filepath.Clean("/" + path)
	if clean == "/" || strings.Contains(path, "..") {
		return "", fmt.Errorf("bad sysctl path %q", path)
	}
	return p.root + clean, nil
}

// WriteSysctl implements SysctlWriter. The value is written in one write(2) without a newline.
func (p *ProcSys) WriteSysctl(path, value string) error {
	name, err := p.file(path)
	if err != nil {
		return err
	}
	return p.do(func() error {
		f, err := os.OpenFile(name, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(value)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s=%s: %w", name, value, err)
		}
		return nil
	})
}

// ReadSysctl returns an entry's value without its trailing newline.
func (p *ProcSys) ReadSysctl(path string) (string, error) {
	name, err := p.file(path)
	if err != nil {
		return "", err
	}
	var value string
	err = p.do(func() error {
		b, err := os.ReadFile(name)
		value = strings.TrimSpace(string(b))
		return err
	})
	return value, err
}

// WorkloadOptions refine ConfigureWorkloadWith.
type WorkloadOptions struct {
	IPv6 bool // also configure IPv6
	// AllowSpoofedSources turns the kernel's reverse-path filter off (the workload has
	// allowSpoofedSourcePrefixes), as Project Calico does.
	AllowSpoofedSources bool
}

// ConfigureWorkload applies Project Calico's host-side sysctls to a workload interface
// (felix endpoint_mgr.go configureInterface): IPv6 accept_ra=0 always (if the interface has IPv6
// at all); IPv4 route_localnet=1, neigh proxy_delay=0, proxy_arp=1, forwarding=1, rp_filter=1; and
// with ipv6, disable_ipv6=0, proxy_ndp=1, forwarding=1.
func ConfigureWorkload(fs SysctlWriter, name string, ipv6 bool) error {
	return ConfigureWorkloadWith(fs, name, WorkloadOptions{IPv6: ipv6})
}

// ConfigureWorkloadWith is ConfigureWorkload with options.
func ConfigureWorkloadWith(w SysctlWriter, name string, opts WorkloadOptions) error {
	if name == "" || strings.ContainsAny(name, "/") || name == "." || name == ".." {
		return fmt.Errorf("bad interface name %q", name)
	}
	// Router advertisements are never accepted from a workload, even without IPv6 support; an
	// interface missing from net/ipv6 (IPv6 disabled in the kernel) is fine.
	if err := w.WriteSysctl("net/ipv6/conf/"+name+"/accept_ra", "0"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("configuring %s: %w", name, err)
	}
	for _, s := range workloadSysctls(name, opts) {
		if err := w.WriteSysctl(s[0], s[1]); err != nil {
			return fmt.Errorf("configuring %s: %w", name, err)
		}
	}
	return nil
}

func workloadSysctls(name string, opts WorkloadOptions) [][2]string {
	rpFilter := "1"
	if opts.AllowSpoofedSources {
		rpFilter = "0"
	}
	v4, v6 := "net/ipv4/conf/"+name+"/", "net/ipv6/conf/"+name+"/"
	out := [][2]string{
		{v4 + "route_localnet", "1"}, // DNAT to 127.0.0.1 (OpenStack metadata)
		{"net/ipv4/neigh/" + name + "/proxy_delay", "0"},
		{v4 + "proxy_arp", "1"}, // the host answers every ARP: the workload's gateway is 169.254.1.1
		{v4 + "forwarding", "1"},
		{v4 + "rp_filter", rpFilter},
	}
	if opts.IPv6 {
		out = append(out, [][2]string{
			{v6 + "disable_ipv6", "0"},
			{v6 + "proxy_ndp", "1"},
			{v6 + "forwarding", "1"},
		}...)
	}
	return out
}

// SetPermanentNeighbor installs a permanent neighbour entry ip -> mac on iface (OpenStack VMs,
// whose MAC is known, so the host never has to resolve them).
func SetPermanentNeighbor(h Handle, iface string, ip netip.Addr, mac net.HardwareAddr) error {
	if !ip.IsValid() || len(mac) == 0 {
		return fmt.Errorf("neighbour %s -> %s on %s: address and MAC required", ip, mac, iface)
	}
	if err := h.SetNeighbor(iface, ip.Unmap(), mac); err != nil {
		return fmt.Errorf("setting neighbour %s -> %s on %s: %w", ip, mac, iface, err)
	}
	return nil
}

// EnableForwarding turns on IP forwarding for the whole host (namespace), as Project Calico's
// felix does by default (IPForwarding=Enabled): workload traffic is routed through the host.
// IPv6 forwarding is set only with ipv6; a kernel without IPv6 is not an error.
func EnableForwarding(w SysctlWriter, ipv6 bool) error {
	if err := w.WriteSysctl("net/ipv4/ip_forward", "1"); err != nil {
		return fmt.Errorf("enabling IPv4 forwarding: %w", err)
	}
	if !ipv6 {
		return nil
	}
	if err := w.WriteSysctl("net/ipv6/conf/all/forwarding", "1"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("enabling IPv6 forwarding: %w", err)
	}
	return nil
}
