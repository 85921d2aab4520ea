package cni

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/calico-host/calico-host/pkg/config"
)

// Default file locations (those of Project Calico).
const (
	DefaultNodenameFile FilePath = "/var/lib/calico/nodename"
	DefaultMTUFile               = "/var/lib/calico/mtu"
	DefaultIPAMLockFile FilePath = "/var/run/calico/ipam.lock"
	DefaultLogFile      FilePath = "/var/log/calico/cni/cni.log"
	DefaultMTU          MTU      = 1500
	calicoIPAMType               = "calico-ipam"
)

// NetConf is the network configuration of the calico and calico-ipam plugins (the fields of
// Project Calico's plugin for an etcd datastore).
type NetConf struct {
	CNIVersion string          `json:"cniVersion,omitempty"`
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	IPAM       IPAMConf        `json:"ipam"`
	DNS        types.DNS       `json:"dns"`
	PrevResult json.RawMessage `json:"prevResult,omitempty"`

	DatastoreType    string `json:"datastore_type"`
	EtcdEndpoints    string `json:"etcd_endpoints"`
	EtcdDiscoverySrv string `json:"etcd_discovery_srv"`
	EtcdScheme       string `json:"etcd_scheme"`
	EtcdAuthority    string `json:"etcd_authority"` // deprecated: host:port
	EtcdKeyFile      string `json:"etcd_key_file"`
	EtcdCertFile     string `json:"etcd_cert_file"`
	EtcdCaCertFile   string `json:"etcd_ca_cert_file"`

	Nodename             string `json:"nodename"`
	NodenameFile         string `json:"nodename_file"`
	NodenameFileOptional bool   `json:"nodename_file_optional"`
	Hostname             string `json:"hostname"` // deprecated
	MTU                  int    `json:"mtu"`
	RequireMTUFile       bool   `json:"require_mtu_file"`
	NumQueues            int    `json:"num_queues"`
	DeviceType           string `json:"device_type"`
	IPAMLockFile         string `json:"ipam_lock_file"`
	LogLevel             string `json:"log_level"`
	LogFilePath          string `json:"log_file_path"`
	LogFileMaxSize       int    `json:"log_file_max_size"`  // MB, default 100
	LogFileMaxAge        int    `json:"log_file_max_age"`   // days, default 30
	LogFileMaxCount      int    `json:"log_file_max_count"` // rotated files kept, default 10
	// PolicySetupTimeoutSeconds, when positive, makes ADD wait up to that long for felix to
	// report the endpoint's policy programmed (its status file in EndpointStatusDir).
	PolicySetupTimeoutSeconds int    `json:"policy_setup_timeout_seconds"`
	EndpointStatusDir         string `json:"endpoint_status_dir"` // default /var/run/calico/endpoint-status

	ContainerSettings struct {
		AllowIPForwarding bool `json:"allow_ip_forwarding"`
	} `json:"container_settings"`
	FeatureControl struct {
		IPAddrsNoIpam bool `json:"ip_addrs_no_ipam"`
		FloatingIPs   bool `json:"floating_ips"`
	} `json:"feature_control"`
	Policy struct {
		Type string `json:"type"`
	} `json:"policy"`
	Kubernetes struct {
		Kubeconfig string `json:"kubeconfig"`
	} `json:"kubernetes"`
}

// IPAMConf is the "ipam" section.
type IPAMConf struct {
	Type       string   `json:"type"`
	AssignIPv4 *string  `json:"assign_ipv4"`
	AssignIPv6 *string  `json:"assign_ipv6"`
	IPv4Pools  []string `json:"ipv4_pools"`
	IPv6Pools  []string `json:"ipv6_pools"`
	Subnet     string   `json:"subnet"`
}

// WantIPv4 reports whether IPv4 is assigned (default yes; only "false" turns it off).
func (c IPAMConf) WantIPv4() bool { return c.AssignIPv4 == nil || *c.AssignIPv4 != "false" }

// WantIPv6 reports whether IPv6 is assigned (only "true" turns it on).
func (c IPAMConf) WantIPv6() bool { return c.AssignIPv6 != nil && *c.AssignIPv6 == "true" }

// networkName is the rule of the CNI specification and of Project Calico's plugin. The calico
// plugin also needs a name that makes a valid Profile (see validateObjects).
var networkName = regexp.MustCompile(`^[a-zA-Z0-9_.\-]+$`)

// ParseNetConf decodes and validates the network configuration.
func ParseNetConf(data []byte) (*NetConf, error) {
	var c NetConf
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, cniErr(types.ErrDecodingFailure, "invalid network configuration JSON", err)
	}
	if !networkName.MatchString(c.Name) {
		return nil, cniErrf(types.ErrInvalidNetworkConfig, "invalid network name %q: must match %s", c.Name, networkName)
	}
	if c.DatastoreType != "" && c.DatastoreType != "etcdv3" {
		return nil, cniErrf(types.ErrInvalidNetworkConfig, "datastore_type %q is not supported: only etcdv3", c.DatastoreType)
	}
	if c.DeviceType != "" && c.DeviceType != "veth" {
		return nil, cniErrf(types.ErrInvalidNetworkConfig, "device_type %q is not supported: only veth", c.DeviceType)
	}
	if c.MTU != 0 {
		if _, err := ParseMTU("mtu", c.MTU); err != nil {
			return nil, err
		}
	}
	if c.PolicySetupTimeoutSeconds < 0 {
		return nil, cniErrf(types.ErrInvalidNetworkConfig, "invalid policy_setup_timeout_seconds %d: must not be negative", c.PolicySetupTimeoutSeconds)
	}
	if err := c.checkFiles(); err != nil {
		return nil, err
	}
	if err := c.IPAM.check(); err != nil {
		return nil, err
	}
	return &c, nil
}

// checkFiles validates the paths and the log rotation settings.
func (c *NetConf) checkFiles() error {
	for _, f := range []struct{ name, value string }{
		{"log_file_path", c.LogFilePath}, {"nodename_file", c.NodenameFile}, {"ipam_lock_file", c.IPAMLockFile},
		{"endpoint_status_dir", c.EndpointStatusDir},
	} {
		if _, err := pathOr(f.name, f.value, "/"); err != nil {
			return err
		}
	}
	_, err := c.rotation()
	return err
}

// check validates the ipam section.
func (c IPAMConf) check() error {
	if c.Type == "" {
		return cniErrf(types.ErrInvalidNetworkConfig, "ipam.type is missing")
	}
	if !networkName.MatchString(c.Type) {
		return cniErrf(types.ErrInvalidNetworkConfig, "invalid ipam.type %q: must be a plugin name matching %s", c.Type, networkName)
	}
	if !c.WantIPv4() && !c.WantIPv6() {
		return cniErrf(types.ErrInvalidNetworkConfig, "ipam assigns neither IPv4 nor IPv6 (assign_ipv4 is \"false\" and assign_ipv6 is not \"true\")")
	}
	for _, pools := range []struct {
		field string
		list  []string
	}{{"ipam.ipv4_pools", c.IPv4Pools}, {"ipam.ipv6_pools", c.IPv6Pools}} {
		for _, p := range pools.list {
			if _, err := netip.ParsePrefix(p); err != nil && !dnsSubdomain.MatchString(p) {
				return cniErrf(types.ErrInvalidNetworkConfig, "invalid %s entry %q: must be an IP pool name or CIDR", pools.field, p)
			}
		}
	}
	return nil
}

// Datastore builds the etcd connection. Precedence, highest first, as Project Calico's plugin
// (whose etcd_* fields override the ETCD_* environment): the network configuration's etcd_*
// fields, then the ETCD_* (or CALICO_ETCD_*) environment of the runtime, then the shared
// datastore file (/etc/calico/datastore.toml), then the defaults. Each setting is taken from the
// highest source that sets it.
func (c *NetConf) Datastore(env config.Env, file string) (config.Datastore, error) {
	var d config.Datastore
	if file != "" {
		if err := d.LoadFile(file); err != nil {
			return d, cniErr(types.ErrInvalidNetworkConfig, "reading the datastore configuration "+file, err)
		}
	}
	d.ApplyEnv(env)
	if err := c.applyEtcd(&d); err != nil {
		return d, err
	}
	if err := d.Finish(); err != nil {
		return d, cniErr(types.ErrInvalidNetworkConfig, "invalid etcd settings", err)
	}
	return d, nil
}

// netConfOrigin names a network configuration field in messages.
const netConfOrigin = " in the CNI network configuration"

// applyEtcd overrides d with the etcd_* fields that are set.
func (c *NetConf) applyEtcd(d *config.Datastore) error {
	endpoints, field := c.EtcdEndpoints, "etcd_endpoints"
	if endpoints == "" && c.EtcdAuthority != "" {
		scheme := c.EtcdScheme
		if scheme == "" {
			scheme = "http"
		}
		endpoints, field = scheme+"://"+c.EtcdAuthority, "etcd_scheme/etcd_authority"
	}
	if endpoints != "" {
		d.Etcd.Endpoints = config.SplitList(endpoints)
		d.Note("etcd.endpoints", field+netConfOrigin)
	}
	if c.EtcdDiscoverySrv != "" && len(d.Etcd.Endpoints) == 0 {
		return cniErrf(types.ErrInvalidNetworkConfig, "etcd_discovery_srv is not supported; set etcd_endpoints")
	}
	for _, f := range []struct {
		from, to    *string
		key, origin string
	}{
		{&c.EtcdCaCertFile, &d.Etcd.CAFile, "etcd.ca_file", "etcd_ca_cert_file"},
		{&c.EtcdCertFile, &d.Etcd.CertFile, "etcd.cert_file", "etcd_cert_file"},
		{&c.EtcdKeyFile, &d.Etcd.KeyFile, "etcd.key_file", "etcd_key_file"},
	} {
		if *f.from != "" {
			*f.to = *f.from
			d.Note(f.key, f.origin+netConfOrigin)
		}
	}
	return nil
}

// NodeName decides the node: nodename, then the nodename file (which must exist unless
// nodename_file_optional), then the deprecated hostname, then the OS hostname.
func (c *NetConf) NodeName() (string, error) {
	if c.Nodename != "" {
		return c.Nodename, nil
	}
	path, err := pathOr("nodename_file", c.NodenameFile, DefaultNodenameFile)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(string(path))
	switch {
	case err == nil && strings.TrimSpace(string(data)) != "":
		return strings.TrimSpace(string(data)), nil
	case err != nil && !c.NodenameFileOptional:
		return "", cniErr(types.ErrInvalidNetworkConfig,
			fmt.Sprintf("no nodename in the configuration and the nodename file %s is unreadable (is calico-startup running?)", path), err)
	}
	if c.Hostname != "" {
		return c.Hostname, nil
	}
	h, err := os.Hostname()
	if err != nil {
		return "", cniErr(types.ErrInternal, "reading the hostname", err)
	}
	return strings.ToLower(strings.TrimSpace(h)), nil
}

// ResolveMTU returns the configured MTU, else the one felix wrote to mtuFile, else 1500.
func (c *NetConf) ResolveMTU(mtuFile string) (MTU, error) {
	if c.MTU != 0 {
		return ParseMTU("mtu", c.MTU)
	}
	data, err := os.ReadFile(mtuFile)
	if err != nil {
		if c.RequireMTUFile {
			return 0, cniErr(types.ErrInvalidNetworkConfig, "require_mtu_file is set but the MTU file is unreadable", err)
		}
		return DefaultMTU, nil
	}
	text := strings.TrimSpace(string(data))
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, cniErrf(types.ErrInvalidNetworkConfig, "MTU file %s holds an invalid MTU %q", mtuFile, text)
	}
	return ParseMTU("MTU in "+mtuFile, n)
}

// LockFile is the host-wide IPAM lock file.
func (c *NetConf) LockFile() (FilePath, error) {
	return pathOr("ipam_lock_file", c.IPAMLockFile, DefaultIPAMLockFile)
}
