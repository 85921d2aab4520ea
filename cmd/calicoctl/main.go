package main

import (
	"os"

	"github.com/calico-host/calico-host/pkg/calicoctl"
)

func main() {
	os.Exit(calicoctl.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
