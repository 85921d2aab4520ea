// Command goldmanerun checks, by hand, that Project Calico's own Goldmane (built from its
// source) takes calico-host's flows and gives them back as felix wrote them. It is not part of
// `make test`: Project Calico's binaries are not in CI. Run it through scripts/goldmane-pc.sh,
// which builds our binaries and a throwaway CA, server and client certificate.
//
// What it does: a fabric of two dual-stack hosts in network namespaces (test/e2e/topo: etcd,
// calico-startup, calico-confd + BIRD, calico-felix), Goldmane in the fabric namespace at
// 198.18.0.254:7443 with mutual TLS (SERVER_CERT_PATH, SERVER_KEY_PATH, CA_CERT_PATH), felix on
// both hosts streaming flow logs to it (FlowLogsGoldmaneServer, with TyphaCAFile, TyphaCertFile
// and TyphaKeyFile as Project Calico's felix takes them). Workloads web (host 1), client and
// other (host 2) make allowed and denied TCP, UDP, ICMP and ICMPv6 connections under a
// GlobalNetworkPolicy, a namespaced NetworkPolicy, a StagedGlobalNetworkPolicy and the
// network's profile, and client reaches the outside network. Goldmane's stream client
// (goldmane/cmd/stream, which dials goldmane:7443 with ./tls.crt, ./tls.key and ./ca.crt: the
// fabric namespace's /etc/netns hosts file names the address) reads the flows back; the
// command checks that each expected flow is there with its action, deciding policy hit and
// pending verdict, that every flow of felix's flow log files reached Goldmane with the same
// key, and that Goldmane's log has no warning about our flows. It exits non-zero otherwise.
//
// The files:
//
//	main.go    flags, the fabric, Goldmane, felix's settings, workloads, policies, probes
//	stream.go  the stream client, its output parsed, the expected flows checked and printed
package main
