// Command felixcompare measures calico-felix side by side with Project Calico's felix on the
// same etcd data (run it through scripts/felix-compare.sh):
//
//  1. the data set (calcbench's, or a JSON array of {key, value} in Project Calico's etcdv3
//     layout, such as ../shared/reference/packet-path/etcd-data.json.gz) is loaded once into an
//     etcd whose data directory is kept as a template;
//  2. each run starts each felix (ours and Project Calico's in nftables mode, alternating which
//     goes first) in a fresh network namespace holding a veth per local workload interface and
//     its own etcd started on a copy of the template: time from the start of the process to
//     ready (/readiness answers 200: the dataplane is programmed), peak and current RSS, the
//     size of the ruleset (`nft list ruleset` lines);
//  3. then a series of changes (alternately a deny rule on a new port in a policy and a new
//     address for a remote workload endpoint), each written once the previous one showed in
//     the kernel ("nft monitor"), and the peak and current RSS after them.
//
// Each measurement line carries the load average when it was taken; the summary gives the
// medians over the runs and the ratios ours / Project Calico's. Everything runs in network
// namespaces named fc<pid>-*, removed at the end.
//
// The files:
//
//	main.go    the flags and the runs
//	data.go    the data set: loaded once into a template etcd, the host's interfaces, the changes
//	side.go    one felix under measurement: its namespace, etcd copy, command line, readiness,
//	           RSS, ruleset size, heap profile
//	report.go  the changes timed through `nft monitor`, and the summary (medians and ratios)
package main
