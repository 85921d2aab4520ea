package calicoctl

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/tabwriter"
)

func init() {
	registerSub("node", "Calico node management.", &command{name: "checksystem", summary: "Verify the compute host is able to run calico-host.", run: (*cli).runCheckSystem})
}

const checkSystemUsage = `Usage:
  calicoctl node checksystem [--kernel-config=<kernel-config>]

Options:
  -h --help                 Show this screen.
  -f --kernel-config=<kernel-config>  Override the kernel config file location.

Description:
  Check the running kernel for what calico-host uses: nf_tables and conntrack (required),
  NAT, VXLAN, IPIP and WireGuard (needed only by pools or settings that use them), and the
  forwarding sysctls. A feature is present when its module is loaded (/proc/modules,
  /sys/module), listed for the running kernel (modules.dep, modules.builtin), or enabled in the
  kernel config (/proc/config.gz, /boot/config-<release>, or --kernel-config). Nothing on the
  host is changed: no module is loaded and no setting written.
`

// kernelFeature is one thing the kernel must (or, when optional, may) provide.
type kernelFeature struct {
	name     string
	modules  []string // module names, any of which provides it
	configs  []string // kernel config options, any of which =y or =m provides it
	optional string   // "" when required; otherwise what needs it
}

var kernelFeatures = []kernelFeature{
	{name: "nf_tables", modules: []string{"nf_tables"}, configs: []string{"CONFIG_NF_TABLES"}},
	{name: "conntrack", modules: []string{"nf_conntrack"}, configs: []string{"CONFIG_NF_CONNTRACK"}},
	{name: "nft_ct", modules: []string{"nft_ct"}, configs: []string{"CONFIG_NFT_CT"}},
	{name: "nft_nat", modules: []string{"nft_nat"}, configs: []string{"CONFIG_NFT_NAT"}, optional: "natOutgoing pools"},
	{name: "nf_conntrack_netlink", modules: []string{"nf_conntrack_netlink"}, configs: []string{"CONFIG_NF_CT_NETLINK"}, optional: "conntrack cleanup of removed endpoints"},
	{name: "vxlan", modules: []string{"vxlan"}, configs: []string{"CONFIG_VXLAN"}, optional: "VXLAN pools"},
	{name: "ipip", modules: []string{"ipip"}, configs: []string{"CONFIG_NET_IPIP"}, optional: "IPIP pools"},
	{name: "wireguard", modules: []string{"wireguard"}, configs: []string{"CONFIG_WIREGUARD"}, optional: "WireGuard encryption"},
}

// sysctlCheck is a setting that must hold a value.
type sysctlCheck struct {
	path     string // under /proc/sys
	want     string
	optional string
}

var sysctlChecks = []sysctlCheck{
	{path: "net/ipv4/ip_forward", want: "1"},
	{path: "net/ipv6/conf/all/forwarding", want: "1", optional: "IPv6 workloads"},
}

// hostView reads the host's kernel facts under root ("/" on a real host; a directory tree in
// tests).
type hostView struct {
	root         string
	kernelConfig string // an override of the kernel config file
}

func (h hostView) path(p string) string { return filepath.Join(h.root, p) }

// checkRow is one line of the report.
type checkRow struct {
	name, status, detail string
	failed               bool
}

func (c *cli) runCheckSystem(args []string) error {
	f := newFlags("node checksystem", checkSystemUsage)
	var kconfig string
	f.str(&kconfig, "", "f", "kernel-config")
	pos, err := f.parse(args, c.stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return failf("Invalid option: 'calicoctl node checksystem %s'. Use flag '--help' to read about a specific subcommand.", strings.Join(pos, " "))
	}
	return checkSystem(c.stdout, hostView{root: "/", kernelConfig: kconfig})
}

// checkSystem prints the table of features and fails if a required one is missing.
func checkSystem(out io.Writer, h hostView) error {
	rows := h.check()
	tw := tabwriter.NewWriter(out, 0, 1, 3, ' ', 0)
	fmt.Fprintln(tw, "FEATURE\tSTATUS\tDETAIL")
	var missing []string
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.name, r.status, r.detail)
		if r.failed {
			missing = append(missing, r.name)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(missing) > 0 {
		return failf("system doesn't meet one or more minimum systems requirements to run calico-host: %s", strings.Join(missing, ", "))
	}
	fmt.Fprintln(out, "System meets minimum system requirements to run calico-host!")
	return nil
}

func (h hostView) check() []checkRow {
	release := h.readTrim("proc/sys/kernel/osrelease")
	rows := []checkRow{{name: "kernel", status: "OK", detail: release}}
	if release == "" {
		rows[0] = checkRow{name: "kernel", status: "UNKNOWN", detail: "cannot read /proc/sys/kernel/osrelease"}
	}
	src := h.moduleSources(release)
	for _, kf := range kernelFeatures {
		rows = append(rows, featureRow(kf, src))
	}
	for _, sc := range sysctlChecks {
		rows = append(rows, h.sysctlRow(sc))
	}
	return rows
}

// moduleSources is what the host says about its modules.
type moduleSources struct {
	loaded  map[string]bool // /proc/modules and /sys/module
	listed  map[string]string
	config  map[string]string // CONFIG_X -> y or m
	cfgFile string
}

func (h hostView) moduleSources(release string) moduleSources {
	src := moduleSources{loaded: map[string]bool{}, listed: map[string]string{}, config: map[string]string{}}
	if data, err := os.ReadFile(h.path("proc/modules")); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				src.loaded[f[0]] = true
			}
		}
	}
	if entries, err := os.ReadDir(h.path("sys/module")); err == nil {
		for _, e := range entries {
			src.loaded[e.Name()] = true
		}
	}
	if release != "" {
		h.listModules(filepath.Join("lib/modules", release, "modules.builtin"), "built in", src.listed)
		h.listModules(filepath.Join("lib/modules", release, "modules.dep"), "loadable", src.listed)
	}
	src.cfgFile, src.config = h.readKernelConfig(release)
	return src
}

var moduleFile = regexp.MustCompile(`([^/:\s]+)\.ko(\.(gz|xz|zst|bz2))?(:|$)`)

// listModules records the modules a modules.builtin or modules.dep file names.
func (h hostView) listModules(p, how string, into map[string]string) {
	f, err := os.Open(h.path(p))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, ":"); i >= 0 {
			line = line[:i+1] // modules.dep: only the module itself, not its dependencies
		}
		if m := moduleFile.FindStringSubmatch(line); m != nil {
			name := strings.ReplaceAll(m[1], "-", "_")
			if _, seen := into[name]; !seen {
				into[name] = how
			}
		}
	}
}

// readKernelConfig reads the first kernel config found (the override only, when given).
func (h hostView) readKernelConfig(release string) (string, map[string]string) {
	candidates := []string{"proc/config.gz", "boot/config-" + release, "lib/modules/" + release + "/build/.config", "usr/src/linux-headers-" + release + "/.config"}
	if h.kernelConfig != "" {
		candidates = []string{h.kernelConfig}
	}
	for _, c := range candidates {
		p := c
		if h.kernelConfig == "" {
			p = h.path(c)
		}
		if cfg, err := parseKernelConfig(p); err == nil {
			return p, cfg
		}
	}
	return "", map[string]string{}
}

func parseKernelConfig(p string) (map[string]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(p, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, err
		}
		defer gz.Close()
		r = gz
	}
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && strings.HasPrefix(k, "CONFIG_") && (v == "y" || v == "m") {
			out[k] = v
		}
	}
	return out, sc.Err()
}

func featureRow(kf kernelFeature, src moduleSources) checkRow {
	for _, m := range kf.modules {
		if src.loaded[m] {
			return checkRow{name: kf.name, status: "OK", detail: "module " + m + " loaded"}
		}
		if how, ok := src.listed[m]; ok {
			return checkRow{name: kf.name, status: "OK", detail: "module " + m + " " + how}
		}
	}
	for _, c := range kf.configs {
		switch src.config[c] {
		case "y":
			return checkRow{name: kf.name, status: "OK", detail: "built in (" + c + "=y)"}
		case "m":
			return checkRow{name: kf.name, status: "OK", detail: "module (" + c + "=m)"}
		}
	}
	if kf.optional != "" {
		return checkRow{name: kf.name, status: "MISSING", detail: "optional: needed only for " + kf.optional}
	}
	return checkRow{name: kf.name, status: "MISSING", detail: "required", failed: true}
}

func (h hostView) sysctlRow(sc sysctlCheck) checkRow {
	name := strings.ReplaceAll(sc.path, "/", ".")
	v := h.readTrim(filepath.Join("proc/sys", sc.path))
	switch {
	case v == sc.want:
		return checkRow{name: name, status: "OK", detail: "= " + v}
	case sc.optional != "":
		return checkRow{name: name, status: "MISSING", detail: fmt.Sprintf("= %s, want %s (optional: needed only for %s)", orDefault(v, "unreadable"), sc.want, sc.optional)}
	}
	return checkRow{name: name, status: "MISSING", detail: fmt.Sprintf("= %s, want %s (required)", orDefault(v, "unreadable"), sc.want), failed: true}
}

func (h hostView) readTrim(p string) string {
	data, err := os.ReadFile(h.path(p))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
