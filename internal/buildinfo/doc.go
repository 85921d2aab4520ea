// Package buildinfo holds the version of calico-host, set at link time with
// -ldflags "-X github.com/calico-host/calico-host/internal/buildinfo.Version=v1.2.3 -X ...GitCommit=abc".
//
// One file, buildinfo.go: Version ("dev" unless set) and GitCommit.
package buildinfo
