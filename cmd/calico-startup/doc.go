// Command calico-startup registers this host in the datastore (Node, addresses, default pools,
// cluster defaults, tunnel addresses) and then keeps its Node up to date as a systemd notify
// service.
//
// One file, main.go: the flags (--config, --datastore-config, --run-once, --version), loading
// the configuration, the metrics server, and the exit code (0, 78 for an invalid configuration,
// which systemd does not restart, 1 on other failures, 2 for bad usage). Everything else lives in
// pkg/startup.
package main
