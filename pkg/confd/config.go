package confd

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/calico-host/calico-host/pkg/config"
)

// Default locations and settings.
const (
	DefaultConfigFile      = "/etc/calico/confd.toml"
	DefaultTemplatesDir    = "/etc/calico/confd/templates"
	DefaultConfDir         = "/etc/calico/confd/conf.d"
	DefaultOutputDir       = "/etc/calico/confd/config"
	DefaultBIRDSocket      = "/run/calico/bird.ctl"
	DefaultSecretsDir      = "/etc/calico/bgp-secrets"
	DefaultNodenameFile    = "/var/lib/calico/nodename"
	DefaultCheckCmd        = "bird -p -c {{.src}}"
	DefaultDebounce        = 500 * time.Millisecond
	DefaultResyncInterval  = 60 * time.Second
	DefaultSnapshotTimeout = 60 * time.Second
)

// Config is calico-confd's configuration: /etc/calico/confd.toml, then the environment.
type Config struct {
	// NodeName is this host's Node name. Empty: $NODENAME, $CALICO_NODENAME, the nodename file,
	// then the hostname.
	NodeName     string `toml:"nodename"`
	NodenameFile string `toml:"nodename_file"`
	// LogSeverity is confd's own log level ($BGP_LOGSEVERITYSCREEN overrides it). BIRD's debug
	// level comes from BGPConfiguration.logSeverityScreen.
	LogSeverity string `toml:"log_severity"`
	// TemplatesDir holds the templates named by relative Template.Src paths.
	TemplatesDir string `toml:"templates_dir"`
	// ConfDir holds extra *.toml files with [[template]] resources.
	ConfDir string `toml:"conf_dir"`
	// OutputDir is where relative Template.Dest paths go; staging happens in OutputDir/.staging.
	OutputDir string `toml:"output_dir"`
	// BIRDSocket is BIRD's control socket, used for the built-in reload.
	BIRDSocket string `toml:"bird_socket"`
	// SecretsDir holds BGP passwords: a secretKeyRef {name, key} is the file SecretsDir/name/key.
	SecretsDir string `toml:"secrets_dir"`
	// RouterID overrides the router id: an IPv4 address, or "hash" (derived from the node name).
	// $CALICO_ROUTER_ID overrides it.
	RouterID string `toml:"router_id"`
	// Debounce is how long a burst of datastore changes is collected into one render.
	Debounce config.Duration `toml:"debounce"`
	// ResyncInterval re-renders periodically (picking up edited templates and password files);
	// an unchanged result reloads nothing. 0 uses the default; negative disables.
	ResyncInterval config.Duration `toml:"resync_interval"`
	// Templates are the template resources; conf_dir adds more. Default: the BIRD templates.
	Templates []Template `toml:"template"`
	// MetricsAddress is host:port of the Prometheus metrics server (/metrics); empty: none.
	MetricsAddress string `toml:"metrics_address"`
	// Vars are free-form strings given to the templates as .Vars (BGP timers, for example).
	Vars map[string]string `toml:"vars"`
}

// Template is one template resource: a Go text/template rendered to a file.
type Template struct {
	// Src is the template file (relative to TemplatesDir).
	Src string `toml:"src"`
	// Dest is the rendered file (relative to OutputDir).
	Dest string `toml:"dest"`
	// Mode is the file mode of Dest, as an octal string; default "0640".
	Mode string `toml:"mode"`
	// CheckCmd validates the staged file before it replaces Dest; "{{.src}}" is the staged
	// path (next to the other staged files, so relative includes resolve to them). Empty: no
	// check. Run without a shell: arguments are split on blanks.
	CheckCmd string `toml:"check_cmd"`
	// ReloadCmd runs after Dest changed. Empty: the built-in reload, "configure" on BirdSocket.
	ReloadCmd string `toml:"reload_cmd"`
}

// DefaultTemplates are the BIRD 2 templates shipped in /etc/calico/confd/templates. Only the main
// file is checked: it includes the others.
func DefaultTemplates() []Template {
	return []Template{
		{Src: "bird.cfg.template", Dest: "bird.cfg", CheckCmd: DefaultCheckCmd},
		{Src: "bird_aggr.cfg.template", Dest: "bird_aggr.cfg"},
		{Src: "bird_ipam.cfg.template", Dest: "bird_ipam.cfg"},
		{Src: "bird_filters.cfg.template", Dest: "bird_filters.cfg"},
		{Src: "bird_peers.cfg.template", Dest: "bird_peers.cfg"},
	}
}

// confDFile is the schema of a conf.d/*.toml file.
type confDFile struct {
	Templates []Template `toml:"template"`
}

// LoadConfig reads the config file (a missing file is fine), the conf.d directory and the
// environment, and fills in defaults.
func LoadConfig(path string, env config.Env) (Config, error) {
	var c Config
	if _, err := config.LoadTOML(path, &c); err != nil {
		return c, err
	}
	c.applyEnv(env)
	c.setDefaults()
	if err := c.loadConfDir(); err != nil {
		return c, err
	}
	if len(c.Templates) == 0 {
		c.Templates = DefaultTemplates()
	}
	if _, err := config.ParseListenAddress(c.MetricsAddress); err != nil {
		return c, fmt.Errorf("metrics_address: %w", err)
	}
	return c, c.Validate()
}

func (c *Config) applyEnv(env config.Env) {
	for _, name := range []string{"NODENAME", "CALICO_NODENAME"} {
		if v, ok := env(name); ok && strings.TrimSpace(v) != "" {
			c.NodeName = strings.TrimSpace(v)
			break
		}
	}
	if v, ok := env("BGP_LOGSEVERITYSCREEN"); ok && v != "" {
		c.LogSeverity = v
	}
	if v, ok := env("CALICO_ROUTER_ID"); ok && v != "" {
		c.RouterID = v
	}
}

func (c *Config) setDefaults() {
	setString(&c.NodenameFile, DefaultNodenameFile)
	setString(&c.TemplatesDir, DefaultTemplatesDir)
	setString(&c.ConfDir, DefaultConfDir)
	setString(&c.OutputDir, DefaultOutputDir)
	setString(&c.BIRDSocket, DefaultBIRDSocket)
	setString(&c.SecretsDir, DefaultSecretsDir)
	if c.Debounce.Duration <= 0 {
		c.Debounce.Duration = DefaultDebounce
	}
	if c.ResyncInterval.Duration == 0 {
		c.ResyncInterval.Duration = DefaultResyncInterval
	}
}

func setString(p *string, v string) {
	if *p == "" {
		*p = v
	}
}

// loadConfDir appends the [[template]] resources of ConfDir/*.toml, in file name order.
func (c *Config) loadConfDir() error {
	files, err := filepath.Glob(filepath.Join(c.ConfDir, "*.toml"))
	if err != nil {
		return fmt.Errorf("listing %s: %w", c.ConfDir, err)
	}
	sort.Strings(files)
	for _, f := range files {
		var cf confDFile
		if _, err := config.LoadTOML(f, &cf); err != nil {
			return err
		}
		c.Templates = append(c.Templates, cf.Templates...)
	}
	return nil
}

// Validate checks the template resources.
func (c *Config) Validate() error {
	bases := map[string]string{}
	for i, t := range c.Templates {
		if t.Src == "" || t.Dest == "" {
			return fmt.Errorf("template %d: src and dest are required", i+1)
		}
		if _, err := t.FileMode(); err != nil {
			return fmt.Errorf("template %s: %w", t.Src, err)
		}
		b := filepath.Base(t.Dest)
		if prev, dup := bases[b]; dup {
			return fmt.Errorf("templates %s and %s both render a file named %s", prev, t.Src, b)
		}
		bases[b] = t.Src
	}
	if c.RouterID != "" && c.RouterID != "hash" && !isIPv4(c.RouterID) {
		return fmt.Errorf("router_id %q must be an IPv4 address or \"hash\"", c.RouterID)
	}
	for name, v := range c.Vars {
		if v != "" && !safeVar.MatchString(v) {
			return fmt.Errorf("[vars] %s = %q: a value is written into BIRD's configuration as it is, so it must be 1-64 letters, digits, '_', '.', ',', ':' or '-'", name, v)
		}
	}
	return nil
}

// FileMode parses Mode (default 0640).
func (t Template) FileMode() (fs.FileMode, error) {
	if t.Mode == "" {
		return 0o640, nil
	}
	var m uint32
	if _, err := fmt.Sscanf(t.Mode, "%o", &m); err != nil || m > 0o777 {
		return 0, fmt.Errorf("mode %q is not an octal file mode", t.Mode)
	}
	return fs.FileMode(m), nil
}

// SrcPath is the template file's path.
func (c *Config) SrcPath(t Template) string { return resolve(c.TemplatesDir, t.Src) }

// DestPath is the rendered file's path.
func (c *Config) DestPath(t Template) string { return resolve(c.OutputDir, t.Dest) }

func resolve(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// ResolveNodeName returns the configured node name, else the first line of the nodename file,
// else the hostname.
func (c *Config) ResolveNodeName() (string, error) {
	if c.NodeName != "" {
		return c.NodeName, nil
	}
	data, err := os.ReadFile(c.NodenameFile)
	switch {
	case err == nil:
		if name := strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0]); name != "" {
			return name, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("reading node name from %s: %w", c.NodenameFile, err)
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("no node name configured and the hostname is unknown: %w", err)
	}
	return strings.ToLower(strings.TrimSpace(host)), nil
}

func isIPv4(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is4()
}
