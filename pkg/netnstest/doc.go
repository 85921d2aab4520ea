// Package netnstest is a privileged test kit: fresh network namespaces
// (random names, deleted when the test ends), veth pairs between them,
// commands and Go code run inside them. Tests that use it skip when not
// root, and never touch the namespace they run in.
//
// It is meant to be the one kit for kernel tests outside pkg/nft (whose
// internal nstest predates it).
//
// One file, netnstest.go: Require (root and the commands a test needs; RequireLong also skips
// under -short), NS and New, Link (a veth pair between two namespaces, with addresses), Run, and
// NS's Path, Handle (a netlink handle inside), IP (`ip -n`), Exec, Try and Do (Go code on a
// thread inside the namespace). Test loggers live in internal/logtest.
package netnstest
