// Package diags builds `calicoctl node diags`' bundle: one gzipped tarball of what helps to
// diagnose a calico-host node (versions, units and their journals, the nftables ruleset, routes,
// rules, neighbours, links and addresses, BIRD's status and configuration, felix's metrics, the
// configuration files, and this host's Node and endpoints from etcd), with every secret redacted.
//
// The files:
//
//	diags.go       the run: collectors in turn, each bounded in time, errors kept in the bundle
//	host.go        the host seen by collectors (a root directory, commands, HTTP, BIRD, etcd)
//	collectors.go  the list of collectors; versions, units and command outputs
//	files.go       configuration files, BIRD's rendered configuration, log files
//	bird.go        BIRD's status through its control socket
//	metrics.go     felix's metrics and health, where its configuration puts them
//	objects.go     this host's Node and endpoints from etcd
//	redact.go      secrets out of every file, whatever its format
//	bundle.go      the tarball
package diags
