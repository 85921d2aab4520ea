// Package calicoctl is calico-host's drop-in for Project Calico's calicoctl in etcd mode: the
// resource commands (apply, create, replace, delete, get, patch, label, validate), version, and
// the command groups (node, ipam, datastore), each added in its own file that registers itself.
// Its wording (messages, errors, tables, JSON key order) is Project Calico's, which scripts parse.
//
// Main is the whole program; cmd/calicoctl only calls it. Everything it prints goes to the
// writers it is given, so tests run it in-process.
//
// The files:
//
//	calicoctl.go      Main, the command registry, global options, usage
//	group.go          command groups and their subcommands ("ipam check", "datastore migrate lock")
//	flags.go          the option parser (pflag) with Project Calico's global options
//	connect.go        the datastore configuration (--config, datastore.toml, environment), session
//	kinds.go          kind names as typed on the command line
//	input.go          documents from -f (files, directories, stdin; YAML or JSON)
//	prepare.go        what apply, create, replace and delete do with each document: namespaces,
//	                  validation, checks against the other documents and the datastore
//	write.go          apply, create and replace: writes with compare-and-swap and retries
//	initialize.go     ClusterInformation and the default tiers, created before writes as
//	                  Project Calico's client does
//	delete.go         delete
//	nodedelete.go     deleting a Node and what belongs to it (endpoints, addresses, IPAM, BGP peers)
//	get.go            get: targets, listings and the output formats
//	output.go         YAML and JSON with Project Calico's key order
//	table.go          ps-style tables (-o ps, wide); tablespecs.go: each kind's columns
//	template.go       -o go-template with the Go shape of Project Calico's list objects
//	patch.go          patch (merge); jsonpatch.go: RFC 6902 JSON patches
//	label.go          label
//	validatecmd.go    validate: documents checked as apply checks them, without a datastore
//	builtin.go        the built-in profile projectcalico-default-allow: served, never written
//	knp.go            Kubernetes NetworkPolicies (knp.default.*) refused, as Project Calico does
//	notimplemented.go warnings for accepted settings calico-host does not implement, staged policies
//	report.go         Project Calico's wording of results and validation errors
//	errors.go         datastore errors reworded as Project Calico's
//	refused.go        Project Calico commands calico-host does not implement: parsed, then refused
//	version.go        version, with the cluster's version and type
//	ipam.go           ipam check, release, configure; ipam_show.go: ipam show;
//	                  ipamreport.go: the ipam check report; ipamsplit.go: ipam split
//	boxtable.go       the framed tables of the ipam commands
//	nodestatus.go     node status: whether felix runs, and BIRD's protocols
//	trace.go          trace: a packet between two endpoints through what felix would program
//	                  (package trace), from a snapshot of the datastore; its exit statuses
//	nodediags.go      node diags (the collectors are in calicoctl/diags)
//	checksystem.go    node checksystem: kernel modules and sysctls
//	datastorecmd.go   datastore migrate lock and unlock; import and export refused
//	progress.go       a progress line on a terminal's stderr; terminal.go: isTerminal
//
// apply, create and replace check every document (alone, against each other and against the
// datastore) before writing: when any is refused, nothing is written.
package calicoctl
