package config

import (
	"fmt"
	"strings"
)

// displayDefault shows a default the way a user would write it.
func (p *Param) displayDefault() string {
	switch {
	case p.Default != "":
		return p.Default
	case p.Name == "FelixHostname":
		return "the OS hostname"
	case p.Kind == KindOptBool:
		return "automatic"
	}
	return "none"
}

// tomlValue renders the default as a TOML value.
func (p *Param) tomlValue() string {
	switch p.Kind {
	case KindBool, KindOptBool, KindInt:
		if p.Default == "" {
			return "true"
		}
		return p.Default
	case KindSeconds:
		return `"` + p.Default + `"`
	case KindAddr:
		if p.Default == "" {
			return `"none"`
		}
	}
	if p.Name == "FelixHostname" {
		return `"host-a"`
	}
	return fmt.Sprintf("%q", p.Default)
}

func (p *Param) typeDoc() string {
	if p.Kind == KindOneOf {
		return "one of " + strings.Join(names(p.Choices), ", ")
	}
	return p.Kind.String()
}

// DefaultFileText is the commented default /etc/calico/felix.toml, generated from Params: every
// main parameter with its environment variable, type, default and whether a change needs a
// restart.
func DefaultFileText() string {
	var b strings.Builder
	b.WriteString(`# calico-felix configuration.
#
# Keys are Project Calico's felix parameter names (case-insensitive). Precedence, highest first:
#   1. the environment, FELIX_<NAME> (e.g. FELIX_LOGSEVERITYSCREEN=Debug),
#      also read from /etc/default/calico-felix by the systemd unit;
#   2. this file (another one with calico-felix --config FILE);
#   3. FelixConfiguration node.<hostname>, then the selector-scoped FelixConfiguration whose
#      spec.nodeSelector matches the labels of this host's Node (the oldest by creation time
#      when several match; one whose selector does not parse is logged and ignored), then
#      FelixConfiguration default, in etcd;
#   4. the defaults shown below.
# The etcd connection itself is configured in /etc/calico/datastore.toml (shared by every
# calico-host component); the Etcd* keys here override it for felix.
# Durations are seconds ("30") or Go durations ("30s"). Lists are comma-separated strings.
# A value that does not parse is logged and ignored. Changing a parameter marked "restart" in
# etcd makes felix exit with status 129; systemd restarts it with the new value.
#
# Project Calico's other felix parameters are accepted too, under their Project Calico names
# (NetlinkTimeoutSecs, WireguardPersistentKeepAlive, ...): those calico-host does not implement
# are logged once, and counted in calico_host_unimplemented_settings, when set to a value other
# than Project Calico's default (see docs/compatibility.md).
#
# Every key is commented out: uncomment and edit to override the default.
`)
	for i := range Params {
		p := &Params[i]
		if !p.Main {
			continue
		}
		fmt.Fprintf(&b, "\n# %s\n", p.Doc)
		restart := "applies live"
		if p.Restart {
			restart = "restart"
		}
		if p.LocalOnly {
			restart += ", local only (ignored in etcd)"
		}
		fmt.Fprintf(&b, "# env %s; %s; default %s; %s.\n", p.EnvName(), p.typeDoc(), p.displayDefault(), restart)
		fmt.Fprintf(&b, "#%s = %s\n", p.Name, p.tomlValue())
	}
	return b.String()
}

// Usage lists the main parameters for --help.
func Usage() string {
	var b strings.Builder
	for i := range Params {
		p := &Params[i]
		if !p.Main {
			continue
		}
		fmt.Fprintf(&b, "  %-28s %-34s default %s\n", p.Name, p.EnvName(), p.displayDefault())
	}
	return b.String()
}

// Table renders the whole parameter table (name, type, default, restart, local-only).
func Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-32s %-34s %-12s %-8s %s\n", "PARAMETER", "TYPE", "DEFAULT", "RESTART", "LOCAL")
	for i := range Params {
		p := &Params[i]
		def := p.displayDefault()
		if len(def) > 12 {
			def = def[:9] + "..."
		}
		fmt.Fprintf(&b, "%-32s %-34s %-12s %-8t %t\n", p.Name, p.typeDoc(), def, p.Restart, p.LocalOnly)
	}
	return b.String()
}
