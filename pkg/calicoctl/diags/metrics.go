package diags

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/config"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// felixServers are felix's HTTP servers as configured: where felix listens, if it does.
type felixServers struct {
	metricsEnabled bool
	metricsAddr    string
	healthEnabled  bool
	healthAddr     string
	sources        []string // where the settings came from, for the bundle
}

// felixSetting is a felix parameter with its default, in Project Calico's spelling.
var felixSettings = []struct{ name, def string }{
	{"PrometheusMetricsEnabled", "false"}, {"PrometheusMetricsHost", ""}, {"PrometheusMetricsPort", "9091"},
	{"HealthEnabled", "false"}, {"HealthHost", "localhost"}, {"HealthPort", "9099"},
}

// collectMetrics fetches felix's metrics and health endpoints where felix's configuration
// (environment file, felix.toml, FelixConfiguration node.<host> and default, in felix's order of
// precedence) says they are. calico-confd serves no HTTP endpoint; the bundle says so.
func collectMetrics(ctx context.Context, h *Host) ([]File, error) {
	s := h.felixServers(ctx)
	var b strings.Builder
	fmt.Fprintf(&b, "felix: metrics enabled=%v at %s; health enabled=%v at %s\nsettings from: %s\n",
		s.metricsEnabled, s.metricsAddr, s.healthEnabled, s.healthAddr, strings.Join(s.sources, ", "))
	b.WriteString("calico-confd serves no metrics or health endpoint; its state is in its journal.\n")
	files := []File{{Name: "metrics/README.txt", Data: []byte(b.String())}}
	var errs []error
	get := func(file, url string) {
		data, err := h.httpGet(ctx, url)
		if err != nil {
			data = fmt.Appendf(data, "\n# GET %s failed: %v\n", url, err)
			errs = append(errs, err)
		}
		files = append(files, File{Name: "metrics/" + file, Data: data})
	}
	if s.metricsEnabled {
		get("felix-metrics.txt", "http://"+s.metricsAddr+"/metrics")
	}
	if s.healthEnabled {
		get("felix-readiness.txt", "http://"+s.healthAddr+"/readiness")
		get("felix-liveness.txt", "http://"+s.healthAddr+"/liveness")
	}
	return files, joinErrs(errs)
}

// felixServers resolves felix's server settings. Sources that cannot be read are skipped (and
// listed as such): the defaults then apply, as they would for felix.
func (h *Host) felixServers(ctx context.Context) felixServers {
	var s felixServers
	layers := []map[string]string{}
	add := func(name string, m map[string]string, err error) {
		if err != nil {
			s.sources = append(s.sources, fmt.Sprintf("%s (unreadable: %v)", name, err))
			return
		}
		if m != nil {
			s.sources = append(s.sources, name)
			layers = append(layers, m)
		}
	}
	env, err := h.felixEnvFile()
	add("/etc/default/calico-felix", env, err)
	toml, err := h.felixTOML()
	add("/etc/calico/felix.toml", toml, err)
	for _, name := range []string{"node." + h.NodeName, "default"} {
		m, err := h.felixConfiguration(ctx, name)
		add("FelixConfiguration "+name, m, err)
	}
	value := func(name, def string) string {
		for _, l := range layers {
			if v, ok := l[strings.ToLower(name)]; ok && v != "" {
				return v
			}
		}
		return def
	}
	v := map[string]string{}
	for _, fs := range felixSettings {
		v[fs.name] = value(fs.name, fs.def)
	}
	s.metricsEnabled, _ = strconv.ParseBool(v["PrometheusMetricsEnabled"])
	s.healthEnabled, _ = strconv.ParseBool(v["HealthEnabled"])
	s.metricsAddr = localAddr(v["PrometheusMetricsHost"], v["PrometheusMetricsPort"])
	s.healthAddr = localAddr(v["HealthHost"], v["HealthPort"])
	return s
}

// localAddr is host:port to reach a server listening on host ("" and wildcards: loopback).
func localAddr(host, port string) string {
	switch host {
	case "", "0.0.0.0", "::", "[::]":
		host = "127.0.0.1"
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}

// felixEnvFile reads FELIX_<NAME>=value lines (nil map when the file does not exist).
func (h *Host) felixEnvFile() (map[string]string, error) {
	data, err := h.readFile("/etc/default/calico-felix")
	if err != nil {
		return nil, nil
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if name, isFelix := strings.CutPrefix(strings.TrimPrefix(k, "export "), "FELIX_"); ok && isFelix {
			m[strings.ToLower(name)] = strings.Trim(v, `"'`)
		}
	}
	return m, sc.Err()
}

// felixTOML reads felix.toml's keys, lower-cased (nil map when it does not exist).
func (h *Host) felixTOML() (map[string]string, error) {
	var raw map[string]any
	found, err := config.LoadTOML(h.path("/etc/calico/felix.toml"), &raw)
	if err != nil || !found {
		return nil, err
	}
	m := map[string]string{}
	for k, v := range raw {
		m[strings.ToLower(k)] = fmt.Sprint(v)
	}
	return m, nil
}

// felixConfiguration reads the server settings of one FelixConfiguration (nil when absent).
func (h *Host) felixConfiguration(ctx context.Context, name string) (map[string]string, error) {
	if h.Datastore == nil {
		return nil, nil
	}
	fc, err := datastore.GetAs[*api.FelixConfiguration](ctx, h.Datastore, "", name)
	if datastore.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := fc.Spec
	m := map[string]string{"prometheusmetricshost": s.PrometheusMetricsHost}
	if s.PrometheusMetricsEnabled != nil {
		m["prometheusmetricsenabled"] = strconv.FormatBool(*s.PrometheusMetricsEnabled)
	}
	if s.PrometheusMetricsPort != nil {
		m["prometheusmetricsport"] = strconv.Itoa(*s.PrometheusMetricsPort)
	}
	if s.HealthEnabled != nil {
		m["healthenabled"] = strconv.FormatBool(*s.HealthEnabled)
	}
	if s.HealthHost != nil {
		m["healthhost"] = *s.HealthHost
	}
	if s.HealthPort != nil {
		m["healthport"] = strconv.Itoa(*s.HealthPort)
	}
	return m, nil
}
