package config

import (
	"fmt"
	"net/url"
	"strings"
)

// Keys of the datastore settings whose origin is noted, as written in datastore.toml.
const (
	keyEndpoints = "etcd.endpoints"
	keyCAFile    = "etcd.ca_file"
	keyCertFile  = "etcd.cert_file"
	keyKeyFile   = "etcd.key_file"
)

// noted lists the settings whose origin is recorded, with their environment variable.
var noted = []struct{ key, env string }{
	{keyEndpoints, "ETCD_ENDPOINTS"},
	{keyCAFile, "ETCD_CA_CERT_FILE"},
	{keyCertFile, "ETCD_CERT_FILE"},
	{keyKeyFile, "ETCD_KEY_FILE"},
}

// origin is where a setting's value came from; it is only believed while the value is unchanged.
type origin struct{ source, value string }

// value is the current value of a noted setting ("" when unset).
func (d *Datastore) value(key string) string {
	switch key {
	case keyEndpoints:
		return strings.Join(d.Etcd.Endpoints, ",")
	case keyCAFile:
		return d.Etcd.CAFile
	case keyCertFile:
		return d.Etcd.CertFile
	case keyKeyFile:
		return d.Etcd.KeyFile
	}
	return ""
}

// Note records source ("etcd_ca_cert_file in the CNI network configuration") as the origin of the
// setting key's current value. A setting that is unset, or changed later without a Note, is
// described by all the names it can be given.
func (d *Datastore) Note(key, source string) {
	v := d.value(key)
	if v == "" {
		return
	}
	if d.origins == nil {
		d.origins = map[string]origin{}
	}
	d.origins[key] = origin{source: source, value: v}
}

func (d *Datastore) noteEnv(env, name string) {
	for _, s := range noted {
		if s.env == env {
			d.Note(s.key, name)
		}
	}
}

// describe names a setting for a message: its noted origin, else every name it has.
func (d *Datastore) describe(key string) string {
	v := d.value(key)
	if o, ok := d.origins[key]; ok && o.value == v {
		return fmt.Sprintf("%s = %q", o.source, v)
	}
	for _, s := range noted {
		if s.key == key {
			return fmt.Sprintf("%s (datastore.toml) / %s / the component's own etcd setting = %q", key, s.env, v)
		}
	}
	return fmt.Sprintf("%s = %q", key, v)
}

// checkEndpoints validates the endpoint URLs and refuses TLS settings that would be dropped.
//
// Project Calico passes the TLS files to the etcd client whatever the endpoints' scheme
// (libcalico-go lib/backend/etcdv3), and etcd's client (client/v3 internal/endpoint) drops the
// credentials for http:// and unix:// endpoints and uses the first endpoint's scheme for every
// connection. So in Project Calico CA/cert/key files with an http:// endpoint silently connect in
// plaintext, and http:// first in a mixed list downgrades the https:// members. We do not follow
// that: a configuration that asks for TLS and would not get it is refused, naming the settings,
// so no component starts in plaintext by mistake (Calico does not upgrade the scheme either, so
// upgrading would be a guess about the operator's intent).
func (d *Datastore) checkEndpoints() error {
	var plain, secure string
	for _, ep := range d.Etcd.Endpoints {
		tls, err := endpointTLS(ep)
		if err != nil {
			return fmt.Errorf("%s: %w", d.describe(keyEndpoints), err)
		}
		switch {
		case tls == schemePlain && plain == "":
			plain = ep
		case tls == schemeTLS && secure == "":
			secure = ep
		}
	}
	if plain == "" {
		return nil
	}
	for _, key := range []string{keyCAFile, keyCertFile, keyKeyFile} {
		if d.value(key) != "" {
			return fmt.Errorf("etcd TLS is configured (%s) but endpoint %q is plain %s (%s): the etcd client would connect without TLS; use https:// endpoints or remove the TLS settings",
				d.describe(key), plain, schemeOf(plain), d.describe(keyEndpoints))
		}
	}
	if secure != "" {
		return fmt.Errorf("etcd endpoints mix plain and TLS schemes (%q and %q in %s): the etcd client would use the first endpoint's scheme for all of them; use one scheme",
			plain, secure, d.describe(keyEndpoints))
	}
	return nil
}

type schemeKind int

const (
	schemeNone  schemeKind = iota // host:port, TLS exactly when TLS files are set
	schemePlain                   // http://, unix://: never TLS
	schemeTLS                     // https://, unixs://: always TLS
)

// endpointTLS classifies an endpoint as etcd's client does; other schemes are refused.
func endpointTLS(ep string) (schemeKind, error) {
	if !strings.Contains(ep, "://") {
		if strings.HasPrefix(ep, "unix:") || strings.HasPrefix(ep, "unixs:") {
			return endpointTLS(strings.Replace(ep, ":", "://", 1))
		}
		return schemeNone, nil
	}
	u, err := url.Parse(ep)
	if err != nil {
		return schemeNone, fmt.Errorf("invalid etcd endpoint %q: %w", ep, err)
	}
	switch u.Scheme {
	case "http", "unix":
		return schemePlain, nil
	case "https", "unixs":
		return schemeTLS, nil
	}
	return schemeNone, fmt.Errorf("etcd endpoint %q: scheme must be http, https, unix or unixs", ep)
}

func schemeOf(ep string) string {
	s, _, _ := strings.Cut(ep, ":")
	return s
}
