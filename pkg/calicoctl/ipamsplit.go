package calicoctl

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/calico-host/calico-host/pkg/ipam"
)

func init() {
	registerSub("ipam", ipamSummary, &command{name: "split", summary: "Split an IP pool into the specified number of smaller IP pools.", run: (*cli).runIPAMSplit})
}

const ipamSplitUsage = `Usage:
  calicoctl ipam split <NUMBER> [--cidr=<CIDR>] [--name=<POOL_NAME>] [--config=<CONFIG>]

Options:
  -h --help                Show this screen.
     --cidr=<CIDR>         CIDR of the IP pool to split (as stored).
     --name=<POOL_NAME>    Name of the IP pool to split (used when both are given).
  -c --config=<CONFIG>     Path to the datastore configuration.

Description:
  Replaces an IP pool by <NUMBER> pools of equal size (a power of two) named
  split-<name>-<i>, copies of the pool with their part of its CIDR, enabled. The
  datastore must be locked first ('calicoctl datastore migrate lock'); unlock it when
  done. Allocated addresses, blocks and affinities are kept as they are.

  calico-host checks everything before writing and writes the new pools and the
  removal of the old one in a single etcd transaction.
`

func (c *cli) runIPAMSplit(args []string) error {
	f := newFlags("ipam split", ipamSplitUsage)
	var cfg, cidr, name string
	f.common(&cfg)
	f.str(&cidr, "", "cidr")
	f.str(&name, "", "name")
	pos, err := c.parseFlags(f, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return failf("Invalid option: 'calicoctl ipam split %s'. Use flag '--help' to read about a specific subcommand.", strings.Join(args, " "))
	}
	parts, err := strconv.Atoi(pos[0])
	if err != nil {
		return fmt.Errorf("error reading number to split IP pools into. %s is not a valid number: %w", pos[0], err)
	}
	s, ic, err := c.ipamClient(cfg)
	if err != nil {
		return err
	}
	defer s.close()
	ctx, cancel := s.op()
	defer cancel()
	res, err := ic.SplitPool(ctx, ipam.SplitRequest{Name: name, CIDR: cidr, Parts: parts})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "IP Pool %s was successfully split into %d smaller pools.\n", res.Old.Name, len(res.Created))
	for _, p := range res.Created {
		fmt.Fprintf(c.stdout, "Created %s with CIDR %s.\n", p.Name, p.Spec.CIDR)
	}
	fmt.Fprintln(c.stdout, "Please refer to the documentation for final steps.")
	return nil
}
