// Package nstest is pkg/nft's layer over the privileged test kit (pkg/netnstest): namespaces
// for nft's kernel tests, and tables read back with the nft command. Tests skip when not root or
// without nft.
//
// One file, nstest.go: Require (root, ip and nft), New (a kit namespace deleted at the test's
// end), NS's List (`nft -s list ruleset` inside it) and Normalize (nft's output made comparable).
package nstest
