package calicoctl

// What docs/calicoctl.md says about each Project Calico command and option beyond "supported":
// how calico-host's behaviour differs, what is accepted without effect, what is refused. The
// documentation test requires a note for every difference it can detect (a refused command, an
// option calico-host adds) and refuses notes about commands or options that do not exist.

// support is what calico-host does with a Project Calico command or option.
type support int

const (
	supported   support = iota // as Project Calico
	extended                   // as Project Calico, with calico-host additions or differences
	partial                    // some values are refused
	noEffect                   // accepted, and changes nothing
	refusedOpt                 // refused with an error saying why
	ownOption                  // calico-host's own option
	notAccepted                // rejected as an unknown option
)

func (s support) String() string {
	return [...]string{"supported", "supported, extended", "partly supported", "accepted, no effect",
		"refused", "calico-host only", "not accepted"}[s]
}

type note struct {
	status support
	text   string
}

// globalPath names the global options in the notes.
const globalPath = "(global)"

// optionNotes are keyed "<command path> --<option>".
var optionNotes = map[string]note{
	globalPath + " --log-level":              {noEffect, "The level is validated as Project Calico does (an unknown one is refused); calicoctl prints only its results and errors, whatever the level."},
	globalPath + " --context":                {noEffect, "Kubernetes only: calico-host keeps its state in etcd."},
	globalPath + " --allow-version-mismatch": {noEffect, "calico-host's calicoctl never compares its version with the cluster's."},

	"validate --config":      {noEffect, "Accepted and ignored, as in Project Calico: validation works offline and never reads the datastore configuration."},
	"get --all-namespaces-a": {supported, "Project Calico's hidden alias of -A (its shorthand -a)."},

	"ipam check --kubeconfig":                  {noEffect, "Project Calico asks Kubernetes which pods hold addresses; calico-host checks blocks against handles and affinities in etcd, so no Kubernetes configuration is used."},
	"ipam check --output":                      {extended, "The report carries Project Calico's metadata (version, clusterGUID, datastoreLocked, clusterInformationRevision) and calico-host's findings, not Calico's per-address allocation map; it is meant for calico-host's ipam release --from-report."},
	"ipam release --from-report":               {extended, "Project Calico's checks before releasing (report of this cluster, one report current, datastore locked unless --force); the addresses released are those leaked in every report given."},
	"ipam configure --kubevirt-ip-persistence": {refusedOpt, "KubeVirt VM address persistence is not implemented by calico-host's IPAM."},
	"ipam configure --ip-cooldown-seconds":     {partial, "0 (addresses reused at once, what calico-host's IPAM does) is accepted; a cooldown is refused."},

	"node diags --log-dir":    {extended, "Copied if it exists; calico-host logs to the journal, which is always collected."},
	"node diags --config":     {ownOption, "The datastore configuration, to collect this host's Node and endpoints."},
	"node diags --output-dir": {ownOption, "Where to write the bundle (default: a new directory under /tmp, as Project Calico)."},
}

// commandNotes say how a command differs from Project Calico's (refused commands say why in
// their registration, which the documentation quotes).
var commandNotes = map[string]string{
	"ipam check":               "Checks blocks, handles and affinities in etcd against each other (Project Calico's needs Kubernetes). Progress is drawn on stderr when it is a terminal.",
	"ipam split":               "Project Calico's preconditions and result (datastore locked; pools split-<name>-<i>, enabled, copies of the pool; the pool deleted; blocks untouched). Everything is checked before anything is written, and the change is one etcd transaction (Calico disables the pool first and may leave it disabled on a later failure). An IPAM block larger than the new pools is refused.",
	"node checksystem":         "Checks the kernel features calico-host uses (nftables, not iptables).",
	"node diags":               "One tarball with calico-host's units and journals, nftables ruleset, routes, rules, neighbours, links, addresses, BIRD's configuration and status, felix's metrics and health, configuration files, and this host's Node and endpoints from etcd. Secrets are redacted in every file. Each collector is bounded in time; a failure is recorded in the bundle. Progress is drawn on stderr when it is a terminal.",
	"node status":              "BIRD 2 answers for both families on one control socket.",
	"datastore migrate lock":   "Sets ClusterInformation datastoreReady to false, as Project Calico: calico-host's CNI plugin then refuses new workloads and felix does not start programming.",
	"datastore migrate unlock": "Sets datastoreReady back to true.",
	"apply":                    "Every document is validated (also against the others and the datastore) before anything is written: if any is refused, none is written (Project Calico writes the others), and the error lists the refused ones in Project Calico's words (\"failed to apply any 'BGPPeer' resources: [error with field PeerIP = ...]\"). Progress is drawn on stderr for 50 documents or more when it is a terminal; settings calico-host accepts but does not implement are warned about.",
	"validate":                 "As Project Calico's: offline, each document on its own; the IP pools of the input are also checked against each other.",
	"create":                   "As apply.",
	"replace":                  "As apply.",
}

// ownCommand documents a command Project Calico's calicoctl does not have: its usage line and
// what it does.
type ownCommand struct{ use, text string }

// ownCommands are calico-host's own commands.
var ownCommands = map[string]ownCommand{
	"trace": {"trace SOURCE DESTINATION", "Prints the path of a connection's first packet (tier -> policy -> rule -> action) on each host it crosses, enforced and pending (staged policies enforced in their place), computed by calico-felix's own calculation graph and ruleset builder over the datastore and a packet simulator of nftables checked against the kernel. Exit status 0 allowed, 3 denied, 4 allowed but denied by a staged policy, 1 error."},
}
