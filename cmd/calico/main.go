package main

import (
	"github.com/containernetworking/cni/pkg/skel"

	"github.com/calico-host/calico-host/pkg/cni"
)

func main() {
	cni.RunWithoutGC()
	skel.PluginMainFuncs(cni.CalicoPlugin(cni.DefaultOptions()), cni.SupportedVersions, "calico-host CNI plugin (calico)")
}
