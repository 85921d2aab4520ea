// Command man generates calico-host's manual pages (go run ./packaging/man -bin bin -out docs/man):
// one for each binary, from its own --help output (run from -bin), and one for each
// /etc/calico/*.toml, from the commented default file shipped in etc/calico (felix.toml is itself
// generated from felix's parameter table, like calico-felix --help). So the pages say what the
// binaries and files say; TestManPagesAreCurrent fails when they are stale. packaging/build
// gzips them into the packages.
//
// One file, main.go: the list of pages (binaries and TOML files), Generate, and the rendering
// into man(7) markup.
package main
