// Package nstest gives pkg/nft's kernel tests fresh network namespaces and
// reads tables back with the nft command. Tests skip when not root.
//
// One file, nstest.go: Require (skip unless root), New (a namespace deleted at the test's end),
// Run (a command, such as nft, inside it) and Normalize (nft's output made comparable).
package nstest
