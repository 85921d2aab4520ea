// Package netnstest is a privileged test kit: fresh network namespaces
// (random names, deleted when the test ends), veth pairs between them,
// commands and Go code run inside them. Tests that use it skip when not
// root, and never touch the namespace they run in.
//
// It is the one kit for kernel tests; pkg/nft's internal nstest adds only
// what is nft's own (listing and normalising the ruleset).
//
// One file, netnstest.go: Require (root and the commands a test needs; RequireLong also skips
// under -short; Privileged is the root check for TestMain), NS and New, Link (a veth pair
// between two namespaces, with addresses), Run, and NS's Path, Handle (a netlink handle
// inside), IP (`ip -n`), Exec, Try, Do (Go code on a thread inside the namespace) and In (Do
// for other goroutines: it returns errors instead of failing the test). Test loggers live in
// internal/logtest.
package netnstest
