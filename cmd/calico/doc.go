// Command calico is the CNI plugin that networks containers with calico-host (etcd datastore).
//
// One file, main.go: it turns the garbage collector off for the short command and runs
// pkg/cni's CalicoPlugin with the CNI library's skeleton (commands from the environment, network
// configuration on stdin, result on stdout). Everything else lives in pkg/cni.
package main
