// Command packetpath is the helper of scripts/packet-path.sh, the side-by-side per-packet
// benchmark of our ruleset and Project Calico's (see ../shared/reference/packet-path). It has
// three modes:
//
//	packetpath load -endpoints http://127.0.0.1:2379 -data etcd-data.json.gz
//	packetpath serve -addr 10.80.200.1:5201
//	packetpath dial -addr 10.80.200.1:5201 -c 4 -d 5s
//	packetpath nflog
//
// load writes a JSON array of {"key", "value"} objects into etcd; serve accepts TCP connections,
// reads one byte and closes; dial opens connections as fast as it can from c goroutines for d,
// each one connect + 1 byte + close with RST (SO_LINGER 0, so no TIME_WAIT piles up), and prints
// "conns=N seconds=S rate=R errors=E"; nflog reads NFLOG groups 1 and 2 (what felix's flow
// log collector reads) until SIGTERM and prints "packets=N overruns=O".
//
// One file, main.go: the four modes.
package main
