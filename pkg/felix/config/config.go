package config

import (
	"crypto/tls"
	"fmt"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/compat"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// Config is felix's resolved configuration. Each parameter's value is in the field named by
// Param.FieldName, in the Go type its consumers use (see Params for meanings and defaults):
// calc and the dataplane take the values as they are, never parsing or defaulting them again.
type Config struct {
	DatastoreType string
	EtcdEndpoints []string
	EtcdAddr      string
	EtcdScheme    string
	EtcdCaFile    string
	EtcdCertFile  string
	EtcdKeyFile   string
	FelixHostname string

	LogSeverityScreen zerolog.Level

	ReportingInterval        time.Duration // ReportingIntervalSecs
	ReportingTTL             time.Duration // ReportingTTLSecs
	EndpointReportingEnabled bool
	EndpointReportingDelay   time.Duration // EndpointReportingDelaySecs
	EndpointStatusPathPrefix string
	OpenstackRegion          string

	HealthEnabled                   bool
	HealthHost                      string
	HealthPort                      int
	PrometheusMetricsEnabled        bool
	PrometheusMetricsHost           string
	PrometheusMetricsPort           int
	PrometheusGoMetricsEnabled      bool
	PrometheusProcessMetricsEnabled bool
	PrometheusMetricsCertFile       string
	PrometheusMetricsKeyFile        string
	PrometheusMetricsCAFile         string
	PrometheusMetricsClientAuth     tls.ClientAuthType

	DebugMemoryProfilePath string
	DebugCPUProfilePath    string
	DebugHost              string
	DebugPort              int

	InterfacePrefix                []string
	InterfaceExclude               []*regexp.Regexp // names match whole
	IPv6Support                    bool
	DefaultEndpointToHostAction    rules.Action
	FailsafeInboundHostPorts       []rules.ProtoPort
	FailsafeOutboundHostPorts      []rules.ProtoPort
	DisableConntrackInvalidCheck   bool
	AllowVXLANPacketsFromWorkloads bool
	AllowIPIPPacketsFromWorkloads  bool
	FilterDenyReject               bool // NftablesFilterDenyAction REJECT
	LogPrefix                      string
	NftablesMarkMask               uint32
	NATOutgoingAddress             netip.Addr
	NATPortRange                   nft.PortRange // zero: unset
	NATOutgoingExcludeHosts        bool          // NATOutgoingExclusions IPPoolsAndHostIPs
	ServiceLoopPrevention          rules.LoopAction
	WorkloadSourceSpoofing         bool // Any
	FloatingIPs                    bool // Enabled
	MetadataAddr                   netip.Addr
	MetadataPort                   int
	NftablesRefreshInterval        time.Duration
	RouteRefreshInterval           time.Duration
	InterfaceRefreshInterval       time.Duration
	DataplaneNetNS                 string

	DeviceRouteProtocol                                    int
	DeviceRouteSourceAddress, DeviceRouteSourceAddressIPv6 netip.Addr
	RemoveExternalRoutes                                   bool
	RouteSyncDisabled                                      bool
	ProgramClusterRoutes                                   calc.ClusterRoutes
	RouteSource                                            calc.RouteSource
	IPv4NormalRoutePriority, IPv6NormalRoutePriority       int
	IPv4ElevatedRoutePriority, IPv6ElevatedRoutePriority   int
	LiveMigrationRouteConvergenceTime                      time.Duration

	VXLANEnabled *bool
	VXLANVNI     int
	VXLANPort    int
	VXLANMTU     int
	VXLANMTUV6   int

	IPForwardingDisabled bool // IPForwarding Disabled
	MTUIfacePattern      *regexp.Regexp
	RequireMTUFile       bool

	IPIPEnabled    *bool
	IPIPMTU        int
	IPIPTunnelAddr netip.Addr

	WireguardEnabled, WireguardEnabledV6             bool
	WireguardListeningPort, WireguardListeningPortV6 int
	WireguardRoutingRulePriority                     int
	WireguardInterfaceName, WireguardInterfaceNameV6 string
	WireguardMTU, WireguardMTUV6                     int
	WireguardPersistentKeepAlive                     time.Duration
	WireguardThreadingEnabled                        bool
	WireguardHostEncryptionEnabled                   bool

	RouteTableRanges, RouteTableRange []TableRange // see RouteTables

	// Cluster facts from the datastore (not parameters).
	Cluster Cluster

	// Sources says where each parameter's value came from (by parameter name).
	Sources map[string]Source

	// NotImplemented are the Project Calico parameters (compat's list) whose value, from the
	// highest source that sets them, calico-host does not implement: one finding per parameter.
	NotImplemented []compat.Finding
}

// Cluster holds what felix learns from ClusterInformation `default` and this host's Node.
type Cluster struct {
	Type           string // ClusterInformation clusterType (comma list)
	GUID           string
	CalicoVersion  string
	DatastoreReady bool
	VXLANTunnelMAC string // the Node's ipv4VXLANTunnelMACAddr ("" = derive from the hostname)
}

// Source is where a value came from, in increasing precedence.
type Source int

// Sources.
const (
	SourceDefault   Source = iota
	SourceDatastore        // FelixConfiguration node.<host> over default
	SourceFile             // /etc/calico/felix.toml
	SourceEnv              // FELIX_<PARAM>
)

func (s Source) String() string {
	return [...]string{"default", "datastore", "config file", "environment"}[s]
}

// Layer is one source's values, keyed by parameter name in any case: text (Values) from the
// environment and the config file, typed values (Typed) from the datastore.
type Layer struct {
	Source Source
	// Origin names the source precisely in logs ("/etc/calico/felix.toml", "FelixConfiguration").
	Origin string
	Values map[string]string
	// Typed holds values of FelixConfiguration fields, dereferenced (see Param.Convert).
	Typed map[string]any
	// Keys, when set, maps a parameter name to how it was spelled in the source (FELIX_X, a TOML
	// key, a FelixConfiguration field).
	Keys map[string]string
	// Origins, when set, overrides Origin per parameter (which FelixConfiguration it came from).
	Origins map[string]string
}

// Problem is a value that was ignored.
type Problem struct {
	Param  string
	Value  string
	Source Source
	Origin string
	Key    string // the spelling in the source (environment variable name, file key)
	Err    error
}

func (p Problem) Error() string {
	where := p.Origin
	if p.Key != "" {
		where += " " + p.Key
	}
	return fmt.Sprintf("ignoring %s value %q from %s: %v", p.Param, p.Value, where, p.Err)
}

// Resolve computes the configuration from the layers: for each parameter the highest-precedence
// layer with a valid value wins, and the default applies when none has one. Unknown names, local-
// only parameters from the datastore and invalid values are returned as Problems (and ignored).
func Resolve(layers ...Layer) (*Config, []Problem) {
	sorted := append([]Layer(nil), layers...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Source > sorted[j].Source })
	r := &resolver{c: &Config{Sources: map[string]Source{}}, set: map[string]bool{}, compatSet: map[string]bool{}}
	for _, l := range sorted {
		for _, name := range sortedKeys(l.Values) {
			raw := l.Values[name]
			r.take(l, name, raw, strings.TrimSpace(raw) == "", func(p *Param) (any, error) { return p.Parse(raw) })
		}
		for _, name := range sortedKeys(l.Typed) {
			v := l.Typed[name]
			s, isText := v.(string)
			r.take(l, name, render(v), isText && strings.TrimSpace(s) == "", func(p *Param) (any, error) { return p.Convert(v) })
		}
	}
	r.c.applyDefaults(r.set)
	return r.c, r.problems
}

// resolver accumulates Resolve's result.
type resolver struct {
	c        *Config
	set      map[string]bool
	problems []Problem
	// compatSet: a parameter on compat's list was seen in a higher layer.
	compatSet map[string]bool
}

// take applies one layer's value of a parameter unless a higher layer set it; blank values are
// unset.
func (r *resolver) take(l Layer, name, shown string, blank bool, convert func(*Param) (any, error)) {
	origin := l.Origin
	if o := l.Origins[name]; o != "" {
		origin = o
	}
	prob := Problem{Param: name, Value: shown, Source: l.Source, Origin: origin, Key: l.Keys[name]}
	p, ok := Lookup(name)
	if s, isCompat := compat.FelixParam(name); !ok && isCompat {
		r.notImplemented(s, l, name, shown, origin)
		return
	}
	switch {
	case !ok:
		prob.Err = fmt.Errorf("unknown parameter")
		r.problems = append(r.problems, prob)
		return
	case p.LocalOnly && l.Source == SourceDatastore:
		prob.Param, prob.Err = p.Name, fmt.Errorf("local-only parameter cannot be set in the datastore")
		r.problems = append(r.problems, prob)
		return
	case r.set[p.Name] || blank:
		return
	}
	v, err := convert(p)
	if err != nil {
		prob.Param, prob.Err = p.Name, err
		r.problems = append(r.problems, prob)
		return
	}
	r.c.setField(p, v)
	r.c.Sources[p.Name], r.set[p.Name] = l.Source, true
}

func (c *Config) setField(p *Param, v any) {
	f := reflect.ValueOf(c).Elem().FieldByName(p.FieldName())
	f.Set(reflect.ValueOf(v))
}

func (c *Config) applyDefaults(set map[string]bool) {
	for i := range Params {
		p := &Params[i]
		if set[p.Name] {
			continue
		}
		c.Sources[p.Name] = SourceDefault
		if p.Default == "" {
			c.setField(p, reflect.Zero(reflect.ValueOf(c).Elem().FieldByName(p.FieldName()).Type()).Interface())
			continue
		}
		v, err := p.Parse(p.Default)
		if err != nil {
			panic(fmt.Sprintf("felix config: default of %s does not parse: %v", p.Name, err))
		}
		c.setField(p, v)
	}
}

// Value returns a parameter's value as stored in Config.
func (c *Config) Value(name string) any {
	p, ok := Lookup(name)
	if !ok {
		return nil
	}
	return reflect.ValueOf(c).Elem().FieldByName(p.FieldName()).Interface()
}

// Changed lists the parameters whose values differ between c and other, split by whether the
// change needs a restart.
func (c *Config) Changed(other *Config) (restart, live []string) {
	for i := range Params {
		p := &Params[i]
		if sameValue(c.Value(p.Name), other.Value(p.Name)) {
			continue
		}
		if p.Restart {
			restart = append(restart, p.Name)
		} else {
			live = append(live, p.Name)
		}
	}
	return restart, live
}

// sameValue compares two values of a parameter: regular expressions by their text (two
// compilations of one text are the same value), the others deeply.
func sameValue(a, b any) bool {
	text := func(re *regexp.Regexp) string { return fmt.Sprint(re) }
	switch x := a.(type) {
	case *regexp.Regexp:
		y, _ := b.(*regexp.Regexp)
		return text(x) == text(y)
	case []*regexp.Regexp:
		y, _ := b.([]*regexp.Regexp)
		return slices.EqualFunc(x, y, func(p, q *regexp.Regexp) bool { return text(p) == text(q) })
	}
	return reflect.DeepEqual(a, b)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Defaults is the configuration of the parameter table's defaults alone.
func Defaults() *Config {
	c, _ := Resolve()
	return c
}
