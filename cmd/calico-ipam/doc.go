// Command calico-ipam is the CNI IPAM plugin that assigns addresses with Calico's block IPAM.
//
// One file, main.go: it turns the garbage collector off for the short command and runs
// pkg/cni's IPAMPlugin with the CNI library's skeleton. Everything else lives in pkg/cni and
// pkg/ipam.
package main
