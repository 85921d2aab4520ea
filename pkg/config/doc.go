// Package config loads calico-host's TOML configuration files and the environment variables that
// Project Calico's users know, starting with the datastore connection shared by every component.
//
// The files:
//
//	toml.go       LoadTOML and DecodeTOML: strict decoding (unknown keys are errors, with their line)
//	datastore.go  Datastore and Etcd: /etc/calico/datastore.toml, then the environment
//	              (ETCD_ENDPOINTS, ...), then defaults and checks (LoadDatastore); Env, Duration
//	endpoints.go  where each datastore setting came from (for messages), and the endpoints'
//	              schemes against the TLS settings (no TLS files with http://)
//	listen.go     ListenAddress: "" or host:port, validated
package config
