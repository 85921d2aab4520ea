// Package buildinfo holds the version of calico-host, set at link time with
// -ldflags "-X github.com/calico-host/calico-host/internal/buildinfo.Version=v1.2.3 -X ...GitCommit=abc".
package buildinfo

// Version is the calico-host release ("dev" for builds outside the release process).
var Version = "dev"

// GitCommit is the commit the binary was built from (empty when unknown).
var GitCommit = ""
