package buildinfo

// Version is the calico-host release ("dev" for builds outside the release process).
var Version = "dev"

// GitCommit is the commit the binary was built from (empty when unknown).
var GitCommit = ""
