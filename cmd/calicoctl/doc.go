// Command calicoctl manages calico-host's (and Project Calico's) resources in etcd.
//
// One file, main.go: it calls pkg/calicoctl's Main with the arguments and the standard streams
// and exits with its code.
package main
