// Command calico-felix is the per-host policy and routing agent: it syncs Project Calico's
// resources from etcd and programs nftables, routes and the tunnel devices (VXLAN, IPIP,
// WireGuard), reporting its status to etcd and to systemd.
//
// One file, main.go: the flags (--config and its spellings -c and --config-file, --version), the
// signal context and the exit status (78 for a bad configuration, felix.ExitRestart when the
// configuration needs a restart). Everything else lives in pkg/felix.
package main
