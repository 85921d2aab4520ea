package calicoctl

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/ipam"
)

const ipamShowUsage = `Usage:
  calicoctl ipam show [--ip=<IP> | --show-blocks | --show-borrowed | --show-configuration] [--config=<CONFIG>]

Options:
  -h --help                Show this screen.
     --ip=<IP>             Report whether this IP address is in use.
     --show-blocks         Show detailed information for IP blocks as well as pools.
     --show-borrowed       Show detailed information for "borrowed" IP addresses.
     --show-configuration  Show current Calico IPAM configuration.
  -c --config=<CONFIG>     Path to the datastore configuration.
`

// blockUsage is one IPAM block as `ipam show` needs it.
type blockUsage struct {
	cidr  netip.Prefix
	block *api.AllocationBlock
	inUse int
}

func (c *cli) runIPAMShow(args []string) error {
	f := newFlags("ipam show", ipamShowUsage)
	var cfg, ip string
	var showBlocks, showBorrowed, showConfig bool
	f.common(&cfg)
	f.str(&ip, "", "ip")
	f.boolean(&showBlocks, "show-blocks")
	f.boolean(&showBorrowed, "show-borrowed")
	f.boolean(&showConfig, "show-configuration")
	pos, err := c.parseFlags(f, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return failf("Invalid option: 'calicoctl ipam show %s'. Use flag '--help' to read about a specific subcommand.", strings.Join(pos, " "))
	}
	s, ic, err := c.ipamClient(cfg)
	if err != nil {
		return err
	}
	defer s.close()
	switch {
	case ip != "":
		return s.showIP(ic, ip)
	case showConfig:
		return s.showIPAMConfig(ic)
	case showBorrowed:
		return s.showBorrowed()
	}
	return s.showUsage(showBlocks)
}

func (s *session) showIP(ic *ipam.Client, arg string) error {
	ip, err := netip.ParseAddr(arg)
	if err != nil {
		return fmt.Errorf("invalid IP address %q", arg)
	}
	ctx, cancel := s.op()
	defer cancel()
	attrs, handle, err := ic.GetAssignmentAttributes(ctx, ip)
	if errors.Is(err, ipam.ErrNotAssigned) {
		fmt.Fprintf(s.stdout, "IP %s is not currently assigned\n", ip)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(s.stdout, "IP %s is in use\n", ip)
	if handle != "" {
		fmt.Fprintf(s.stdout, "Handle ID: %s\n", handle)
	}
	if len(attrs) > 0 {
		fmt.Fprintln(s.stdout, "Attributes:")
		keys := make([]string, 0, len(attrs))
		for k := range attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(s.stdout, "  %s: %s\n", k, attrs[k])
		}
	}
	return nil
}

func (s *session) showIPAMConfig(ic *ipam.Client) error {
	ctx, cancel := s.op()
	defer cancel()
	conf, err := ic.GetIPAMConfig(ctx)
	if err != nil {
		return err
	}
	boxTable(s.stdout, []string{"PROPERTY", "VALUE"}, [][]string{
		{"StrictAffinity", strconv.FormatBool(conf.StrictAffinity)},
		{"AutoAllocateBlocks", strconv.FormatBool(conf.AutoAllocateBlocks)},
		{"MaxBlocksPerHost", strconv.Itoa(conf.MaxBlocksPerHost)},
	})
	return nil
}

// blocks reads every IPAM block; undecodable ones are reported on stderr and skipped.
func (s *session) blocks() ([]blockUsage, error) {
	ctx, cancel := s.op()
	defer cancel()
	kvs, _, err := s.ds.ListKV(ctx, datastore.BlockPrefix, 0)
	if err != nil {
		return nil, fmt.Errorf("listing IPAM blocks: %w", err)
	}
	var out []blockUsage
	for _, kv := range kvs {
		b, cidr, err := decodeBlock(kv)
		if err != nil {
			fmt.Fprintf(s.stderr, "Warning: skipping %s: %v\n", kv.Key, err)
			continue
		}
		u := blockUsage{cidr: cidr.Masked(), block: b}
		for _, a := range b.Allocations {
			if a != nil {
				u.inUse++
			}
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].cidr.Addr().Less(out[j].cidr.Addr()) })
	return out, nil
}

// showUsage prints the usage of every pool (and of its blocks with --show-blocks).
func (s *session) showUsage(showBlocks bool) error {
	blocks, err := s.blocks()
	if err != nil {
		return err
	}
	ctx, cancel := s.op()
	pools, _, err := datastore.ListAs[*api.IPPool](ctx, s.ds, "")
	cancel()
	if err != nil {
		return fmt.Errorf("listing IP pools: %w", err)
	}
	sort.Slice(pools, func(i, j int) bool { return pools[i].Spec.CIDR < pools[j].Spec.CIDR })
	var rows [][]string
	for _, p := range pools {
		cidr, err := netip.ParsePrefix(p.Spec.CIDR)
		if err != nil {
			continue
		}
		var mine []blockUsage
		inUse := 0
		for _, b := range blocks {
			if cidr.Contains(b.cidr.Addr()) {
				mine, inUse = append(mine, b), inUse+b.inUse
			}
		}
		rows = append(rows, usageRow("IP Pool", cidr, inUse))
		if showBlocks {
			for _, b := range mine {
				rows = append(rows, usageRow("Block", b.cidr, b.inUse))
			}
		}
	}
	boxTable(s.stdout, []string{"GROUPING", "CIDR", "IPS TOTAL", "IPS IN USE", "IPS FREE"}, rows)
	return nil
}

// usageRow is one row of `ipam show`: the size of a CIDR, and how much of it is used and free.
func usageRow(grouping string, cidr netip.Prefix, inUse int) []string {
	total := new(big.Int).Lsh(big.NewInt(1), uint(cidr.Addr().BitLen()-cidr.Bits()))
	used := big.NewInt(int64(inUse))
	free := new(big.Int).Sub(total, used)
	pct := func(n *big.Int) string {
		f, _ := new(big.Float).Quo(new(big.Float).SetInt(n), new(big.Float).SetInt(total)).Float64()
		return fmt.Sprintf("%s (%.0f%%)", n, 100*f)
	}
	return []string{grouping, cidr.String(), total.String(), pct(used), pct(free)}
}

// showBorrowed lists addresses allocated to a host other than the one the block is affine to.
func (s *session) showBorrowed() error {
	blocks, err := s.blocks()
	if err != nil {
		return err
	}
	var rows [][]string
	for _, b := range blocks {
		owner := ""
		if b.block.Affinity != nil {
			owner = strings.TrimPrefix(*b.block.Affinity, "host:")
		}
		for ord, idx := range b.block.Allocations {
			if idx == nil || *idx >= len(b.block.Attributes) {
				continue
			}
			attrs := b.block.Attributes[*idx].ActiveOwnerAttrs
			node := attrs["node"]
			if node == "" || node == owner {
				continue
			}
			rows = append(rows, []string{ordinalIP(b.cidr, ord).String(), node, b.cidr.String(), owner,
				orDefault(attrs["type"], "ipam"), allocatedTo(attrs)})
		}
	}
	boxTable(s.stdout, []string{"IP", "BORROWING-NODE", "BLOCK", "BLOCK OWNER", "TYPE", "ALLOCATED-TO"}, rows)
	return nil
}

func ordinalIP(cidr netip.Prefix, ord int) netip.Addr {
	b := cidr.Addr().AsSlice()
	carry := ord
	for i := len(b) - 1; i >= 0 && carry > 0; i-- {
		sum := int(b[i]) + carry
		b[i] = byte(sum)
		carry = sum >> 8
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func allocatedTo(attrs map[string]string) string {
	switch {
	case attrs["pod"] != "":
		return attrs["namespace"] + "/" + attrs["pod"]
	case attrs["container"] != "":
		return attrs["container"]
	}
	return ""
}

func decodeBlock(kv datastore.KV) (*api.AllocationBlock, netip.Prefix, error) {
	v, err := datastore.Decode(kv.Key, kv.Value, kv.ModRevision)
	if err != nil {
		return nil, netip.Prefix{}, err
	}
	b, ok := v.(*api.AllocationBlock)
	if !ok {
		return nil, netip.Prefix{}, fmt.Errorf("not an IPAM block")
	}
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		return nil, netip.Prefix{}, fmt.Errorf("block has invalid cidr %q", b.CIDR)
	}
	return b, cidr, nil
}
