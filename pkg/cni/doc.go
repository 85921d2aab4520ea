// Package cni implements the `calico` CNI plugin and the `calico-ipam` IPAM plugin for an etcd
// datastore, compatible with Project Calico's plugins: the same network configuration fields, the
// same IPAM handles and attributes, WorkloadEndpoints and Profiles, and the same veth plumbing.
// cmd/calico and cmd/calico-ipam are thin mains over CalicoPlugin and IPAMPlugin.
//
// The files:
//
//	session.go     Options (the ties to the outside world), session: one invocation's
//	               configuration, logger, workload and datastore
//	plugin.go      CalicoPlugin: ADD, DEL, CHECK of the calico plugin; a failed ADD undoes its work
//	ipamplugin.go  IPAMPlugin: ADD, DEL, CHECK of calico-ipam
//	ipamflow.go    addresses from calico-ipam (in-process) or a delegated IPAM plugin; release
//	endpoint.go    the first etcd read (datastoreReady, endpoint, profile); the WorkloadEndpoint
//	               and Profile written as Project Calico's plugin writes them
//	workload.go    Workload: the container's endpoint identity and the names derived from it
//	netconf.go     NetConf and IPAMConf: the network configuration, parsed and validated
//	args.go        Args: CNI_ARGS
//	values.go      the typed inputs (IfName, MTU, FilePath, ...): the only form in which inputs
//	               reach netlink, /proc/sys, files and etcd keys
//	veth.go        VethConfig, SetupVeth: the veth pair, addresses, routes, sysctls
//	vethcheck.go   CheckVeth: what SetupVeth configured is still there
//	vethowner.go   which interfaces are this container's (an owner mark in the host veth's alias);
//	               DeleteVeth and RemoveCreatedVeth touch only those
//	netns.go       the container's network namespace: netlink handle, sysctls, never the host's
//	attachment.go  one operation per container and interface at a time (a file lock)
//	lock.go        the host-wide IPAM lock
//	policywait.go  waiting for felix's endpoint status file (policy_setup_timeout_seconds)
//	result.go      the plugins' results in Project Calico's shape
//	errors.go      CNI error codes and messages
//	log.go         the logger: log_level to the log file, warnings and errors also to stderr
//	logfile.go     the log file and its rotation (log_file_max_size, _age, _count)
//	gc.go          RunWithoutGC: no garbage collection during a short command
//
// Every input is parsed into its type and validated before anything is allocated or changed; a
// value that does not parse is refused with a CNI error naming the input.
package cni
