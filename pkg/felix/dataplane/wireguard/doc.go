// Package wireguard owns felix's WireGuard devices: the private key kept on the host, the device
// (a kernel device it creates, or a device it finds, such as a userspace one), its peers, and the
// routing rule that sends unmarked traffic to felix's WireGuard routing table. The dataplane
// computes the desired Devices (from calc's host metadata) and calls Manager.Apply.
//
// The files:
//
//	device.go     Family, Device, Peer: the desired state, validated
//	key.go        the private key file: LoadOrCreateKey (mode 0600), RemoveKey
//	manager.go    Manager (one per network namespace, through netlink and wgctrl): Apply
//	              creates or finds each device, sets its address and configures only the peers
//	              that differ
//	rule.go       the routing rule per IP version; disabling a family removes its device and rule
//	threading.go  threaded NAPI (WireguardThreadingEnabled) through /sys/class/net
//	metrics.go    Project Calico's WireGuard metrics, peers up (PeersUp)
//
// wireguard/wgtest gives tests a userspace device where the kernel has no wireguard driver.
package wireguard
