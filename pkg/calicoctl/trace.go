package calicoctl

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/syncer"
	"github.com/calico-host/calico-host/pkg/trace"
)

// `calicoctl trace`: the verdicts of a connection, enforced and pending, with felix's own code
// (package trace). Project Calico's calicoctl has no such command; the name fits its command
// set (a verb on what the datastore holds, as get and label are).

func init() {
	register(&command{name: "trace", summary: "Trace a connection through the policies of the hosts it crosses.", run: (*cli).runTrace})
}

const traceUsage = `Usage:
  calicoctl trace <SOURCE> <DESTINATION> [--protocol=<PROTOCOL>] [--port=<PORT>] [--steps] [--config=<CONFIG>]

Examples:
  # Would web-1 reach db-1 on TCP port 5432?
  calicoctl trace prod/web-1 db-1 --port=5432

  # Ping from a workload address to a host.
  calicoctl trace 10.65.0.5 host-b --protocol=ICMP

Options:
  -h --help                    Show this screen.
  -p --protocol=<PROTOCOL>     TCP, UDP, SCTP, ICMP, ICMPv6 or a protocol number [default: TCP].
     --port=<PORT>             The destination port (TCP, UDP and SCTP need one).
     --steps                   Print every rule the packet meets on each host.
  -c --config=<CONFIG>         Path to the datastore configuration.

Description:
  Evaluates the first packet of a connection from SOURCE to DESTINATION as the felix
  of each host on its way would: the source's egress policy on its host, the
  destination's ingress policy on its host. Each end is a workload endpoint
  ("<namespace>/<name>", its name or its workload's name), a host endpoint, a node,
  or an address (one no endpoint holds is the network beyond the hosts).

  It runs calico-felix's own code over what the datastore holds: its calculation
  graph for each host, its ruleset builder, and a packet simulator of nftables
  checked against the kernel. It prints the path (tier -> policy -> rule -> action)
  twice: as enforced, and pending, with the staged policies (StagedGlobalNetworkPolicy,
  StagedNetworkPolicy, StagedKubernetesNetworkPolicy) enforced in their place, as flow
  logs report them.

  Hosts are modelled from the datastore: felix's defaults and FelixConfigurations
  (not the hosts' local configuration files), the Node's addresses on the uplink
  (the interface the host's host endpoint names, else eth0).

Exit status:
  0  allowed, enforced and pending
  1  error
  3  denied by the enforced policy
  4  allowed, but denied by the pending policy (a staged policy would deny it)
`

// Exit statuses of calicoctl trace besides exitOK and exitError.
const (
	exitDenied        = 3
	exitPendingDenied = 4
)

// snapshotTimeout bounds reading the datastore for a trace.
const snapshotTimeout = 60 * time.Second

func (c *cli) runTrace(args []string) error {
	f := newFlags("trace", traceUsage)
	var cfg, protoText, portText string
	var steps bool
	f.common(&cfg)
	f.str(&protoText, "TCP", "p", "protocol")
	f.str(&portText, "", "port")
	f.boolean(&steps, "steps")
	pos, err := c.parseFlags(f, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return failf("Invalid arguments: calicoctl trace needs a SOURCE and a DESTINATION. Use flag '--help' to read about a specific subcommand.")
	}
	req, err := traceRequest(pos[0], pos[1], protoText, portText)
	if err != nil {
		return err
	}
	s, err := c.connect(cfg)
	if err != nil {
		return err
	}
	defer s.close()
	ups, err := s.snapshot()
	if err != nil {
		return err
	}
	t, err := trace.Run(ups, req, zerolog.Nop())
	if err != nil {
		return failf("Failed to trace: %w", err)
	}
	trace.Print(c.stdout, t, steps)
	return traceStatus(t)
}

// traceStatus is the exit status a script reads.
func traceStatus(t *trace.Trace) error {
	switch {
	case !t.Enforced.Allowed:
		return exitStatus(exitDenied)
	case !t.Pending.Allowed:
		return exitStatus(exitPendingDenied)
	}
	return nil
}

// protocols are the protocol names calicoctl trace takes (Project Calico's rule protocols).
var protocols = map[string]uint8{"tcp": flowlog.ProtoTCP, "udp": flowlog.ProtoUDP, "icmp": flowlog.ProtoICMP,
	"icmpv6": flowlog.ProtoICMPv6, "sctp": 132, "udplite": 136}

func traceRequest(src, dst, protoText, portText string) (trace.Request, error) {
	req := trace.Request{Src: src, Dst: dst}
	p, ok := protocols[strings.ToLower(protoText)]
	if !ok {
		n, err := strconv.ParseUint(protoText, 10, 8)
		if err != nil {
			return req, failf("Invalid protocol %q: TCP, UDP, SCTP, ICMP, ICMPv6 or a number from 0 to 255", protoText)
		}
		p = uint8(n)
	}
	req.Proto = p
	hasPorts := p == flowlog.ProtoTCP || p == flowlog.ProtoUDP || p == 132 || p == 136
	switch {
	case hasPorts && portText == "":
		return req, failf("A destination port (--port) is needed for protocol %s", flowlog.ProtoName(p))
	case portText == "":
		return req, nil
	}
	n, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || n == 0 {
		return req, failf("Invalid port %q: a number from 1 to 65535", portText)
	}
	req.Port = uint16(n)
	return req, nil
}

// snapshot reads every resource of the datastore at one revision, as felix's syncer delivers
// them (objects that fail validation wrapped, as felix sees them).
func (s *session) snapshot() ([]syncer.Update, error) {
	ctx, cancel := context.WithTimeout(s.ctx, snapshotTimeout)
	defer cancel()
	out := make(chan syncer.Message)
	sy := syncer.New(s.ds, syncer.Config{Prefixes: []string{datastore.ResourcePrefix}, Decoder: syncer.FailClosedDecoder}, zerolog.Nop())
	go sy.Run(ctx, out)
	held := map[string]syncer.Update{}
	have := false
	for {
		select {
		case m := <-out:
			if m.Snapshot {
				clear(held)
				have = true
			}
			for _, u := range m.Updates {
				held[u.ID.Key()] = u
			}
			if have && m.Status == syncer.InSync {
				return sortedUpdates(held), nil
			}
		case <-ctx.Done():
			return nil, failf("Failed to read the datastore: %w", ctx.Err())
		}
	}
}

func sortedUpdates(held map[string]syncer.Update) []syncer.Update {
	out := make([]syncer.Update, 0, len(held))
	for _, u := range held {
		if u.Value != nil {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b syncer.Update) int { return cmp.Compare(a.ID.Key(), b.ID.Key()) })
	return out
}
