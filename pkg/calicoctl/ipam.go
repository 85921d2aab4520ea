package calicoctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/ipam"
)

const ipamSummary = "IP address management."

func init() {
	registerSub("ipam", ipamSummary, &command{name: "check", summary: "Check the integrity of the IPAM datastructures.", run: (*cli).runIPAMCheck})
	registerSub("ipam", ipamSummary, &command{name: "release", summary: "Release a Calico assigned IP address.", run: (*cli).runIPAMRelease})
	registerSub("ipam", ipamSummary, &command{name: "configure", summary: "Configure IPAM.", run: (*cli).runIPAMConfigure})
	registerSub("ipam", ipamSummary, &command{name: "show", summary: "Show details of a Calico configuration,\n                 assigned IP address, or of overall IP usage.", run: (*cli).runIPAMShow})
}

// ipamClient connects and returns an IPAM client on the connection.
func (c *cli) ipamClient(cfg string) (*session, *ipam.Client, error) {
	s, err := c.connect(cfg)
	if err != nil {
		return nil, nil, err
	}
	return s, ipam.New(s.ds, zerolog.New(c.stderr).Level(zerolog.WarnLevel)), nil
}

const ipamCheckUsage = `Usage:
  calicoctl ipam check [--config=<CONFIG>] [--show-all-ips] [--show-problem-ips] [--output=<FILE>]

Options:
  -h --help                Show this screen.
     --show-all-ips        Print every allocated IP, block by block, with its attributes.
     --show-problem-ips    Print every leaked IP (the counts are always printed).
     --kubeconfig=<FILE>   Accepted for compatibility (Kubernetes only; unused with etcd).
  -o --output=<FILE>       Also write the report as JSON to FILE (input for
                           'calicoctl ipam release --from-report').
  -c --config=<CONFIG>     Path to the datastore configuration.

Description:
  Reads every IPAM block, handle and affinity and reports inconsistencies between them:
  allocations no handle can release, handle counts that do not match the blocks, blocks and
  affinities without each other, interrupted claims and corrupt blocks.
`

func (c *cli) runIPAMCheck(args []string) error {
	f := newFlags("ipam check", ipamCheckUsage)
	var cfg, output, kubeconfig string
	var show checkShow
	f.common(&cfg)
	f.str(&output, "", "o", "output")
	f.str(&kubeconfig, "", "kubeconfig")
	f.boolean(&show.all, "show-all-ips")
	f.boolean(&show.problems, "show-problem-ips")
	pos, err := f.parse(args, c.stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return failf("Invalid option: 'calicoctl ipam check %s'. Use flag '--help' to read about a specific subcommand.", strings.Join(pos, " "))
	}
	s, ic, err := c.ipamClient(cfg)
	if err != nil {
		return err
	}
	defer s.close()
	ctx, cancel := s.op()
	defer cancel()
	fmt.Fprintln(c.stdout, "Checking IPAM for inconsistencies...")
	r, err := ic.Check(ctx)
	if err != nil {
		return fmt.Errorf("checking IPAM: %w", err)
	}
	printCheckReport(c.stdout, r, show)
	if output != "" {
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(output, append(data, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
		fmt.Fprintf(c.stdout, "Report written to %s\n", output)
	}
	return nil
}

// checkShow is what `ipam check` lists beyond the counts.
type checkShow struct {
	all      bool // every allocation (--show-all-ips)
	problems bool // every leaked address (--show-problem-ips)
}

func printCheckReport(out io.Writer, r *ipam.CheckReport, show checkShow) {
	fmt.Fprintf(out, "\nFound %d IPAM blocks, %d handles and %d affinities.\n", r.Blocks, r.Handles, r.Affinities)
	if show.all {
		printAllocations(out, r.Allocations)
	}
	fmt.Fprintf(out, "IPAM blocks record %d allocations.\n\n", r.AllocatedIPs)
	section := func(n int, what string, lines func(emit func(string, ...any))) {
		fmt.Fprintf(out, "Found %d %s.\n", n, what)
		lines(func(format string, args ...any) { fmt.Fprintf(out, "  "+format+"\n", args...) })
	}
	section(len(r.LeakedIPs), "IPs that are leaked (allocated with no handle that can release them)", func(emit func(string, ...any)) {
		if !show.problems {
			return
		}
		for _, l := range r.LeakedIPs {
			emit("%s in block %s (handle %q) leaked; attrs %s", l.IP, l.Block, l.Handle, allocationAttrs(r.Allocations, l.IP))
		}
	})
	section(len(r.HandleMismatches), "handle counts that do not match the blocks", func(emit func(string, ...any)) {
		for _, m := range r.HandleMismatches {
			emit("handle %s block %s: recorded %d, allocated %d", m.Handle, m.Block, m.Recorded, m.Actual)
		}
	})
	refs := func(what string, l []ipam.BlockRef) {
		section(len(l), what, func(emit func(string, ...any)) {
			for _, b := range l {
				if b.State != "" {
					emit("host %s block %s (%s)", b.Host, b.Block, b.State)
				} else {
					emit("host %s block %s", b.Host, b.Block)
				}
			}
		})
	}
	refs("blocks affine to a host that has no affinity for them", r.BlocksWithoutAffinity)
	refs("confirmed affinities without a block", r.AffinitiesWithoutBlock)
	refs("pending affinities (interrupted claims or releases)", r.PendingAffinities)
	section(len(r.CorruptBlocks), "corrupt blocks", func(emit func(string, ...any)) {
		for _, b := range r.CorruptBlocks {
			emit("%s: %s", b.Block, b.Reason)
		}
	})
	fmt.Fprintf(out, "\nCheck complete; found %d problems.\n", r.Problems())
}

// printAllocations lists every allocation under its block, as Project Calico's --show-all-ips.
func printAllocations(out io.Writer, allocs []ipam.Allocation) {
	block := ""
	for _, a := range allocs {
		if a.Block != block {
			block = a.Block
			fmt.Fprintf(out, " IPAM block %s affinity=%s:\n", a.Block, orDefault(a.Affinity, "<none>"))
		}
		fmt.Fprintf(out, "  %s allocated; attrs %s\n", a.IP, formatAttrs(a.Attr))
	}
}

func allocationAttrs(allocs []ipam.Allocation, ip netip.Addr) string {
	for _, a := range allocs {
		if a.IP == ip {
			return formatAttrs(a.Attr)
		}
	}
	return "<missing>"
}

// formatAttrs prints an allocation's attributes as Project Calico's ipam check does:
// "Main:<handle> Extra:<k=v,...>" and, when present, " Alternate:<k=v,...>".
func formatAttrs(a api.AllocationAttribute) string {
	handle := "<none>"
	if a.HandleID != nil {
		handle = *a.HandleID
	}
	s := fmt.Sprintf("Main:%s Extra:%s", handle, sortedKVs(a.ActiveOwnerAttrs))
	if len(a.AlternateOwnerAttrs) > 0 {
		s += " Alternate:" + sortedKVs(a.AlternateOwnerAttrs)
	}
	return s
}

func sortedKVs(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kvs := make([]string, len(keys))
	for i, k := range keys {
		kvs[i] = k + "=" + m[k]
	}
	return strings.Join(kvs, ",")
}

const ipamReleaseUsage = `Usage:
  calicoctl ipam release [--ip=<IP>] [--from-report=<REPORT>] [--config=<CONFIG>]

Options:
  -h --help                 Show this screen.
     --ip=<IP>              IP address to release (a comma-separated list is accepted).
     --from-report=<REPORT> Release the leaked addresses of a report written by
                            'calicoctl ipam check -o <REPORT>'.
  -c --config=<CONFIG>      Path to the datastore configuration.
`

func (c *cli) runIPAMRelease(args []string) error {
	f := newFlags("ipam release", ipamReleaseUsage)
	var cfg, ipArg, report string
	f.common(&cfg)
	f.str(&ipArg, "", "ip")
	f.str(&report, "", "from-report")
	pos, err := f.parse(args, c.stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 || (ipArg == "") == (report == "") {
		return failf("Invalid option: 'calicoctl ipam release %s'. Use flag '--help' to read about a specific subcommand.", strings.Join(args, " "))
	}
	ips, err := releaseTargets(ipArg, report)
	if err != nil {
		return err
	}
	s, ic, err := c.ipamClient(cfg)
	if err != nil {
		return err
	}
	defer s.close()
	ctx, cancel := s.op()
	defer cancel()
	notAssigned, err := ic.ReleaseIPs(ctx, ips...)
	if err != nil {
		return fmt.Errorf("releasing IP addresses: %w", err)
	}
	skipped := map[netip.Addr]bool{}
	var errs []error
	for _, ip := range notAssigned {
		skipped[ip] = true
		errs = append(errs, fmt.Errorf("IP address %s is not assigned", ip))
	}
	for _, ip := range ips {
		if !skipped[ip.Unmap()] {
			fmt.Fprintf(c.stdout, "Successfully released IP address %s\n", ip)
		}
	}
	return errors.Join(errs...)
}

// releaseTargets parses --ip or reads the leaked addresses of a check report.
func releaseTargets(ipArg, report string) ([]netip.Addr, error) {
	if report != "" {
		data, err := os.ReadFile(report)
		if err != nil {
			return nil, fmt.Errorf("reading report: %w", err)
		}
		var r ipam.CheckReport
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("parsing report %s: %w", report, err)
		}
		out := make([]netip.Addr, len(r.LeakedIPs))
		for i, l := range r.LeakedIPs {
			out[i] = l.IP
		}
		return out, nil
	}
	var out []netip.Addr
	for _, s := range strings.Split(ipArg, ",") {
		ip, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("invalid IP address %q", s)
		}
		out = append(out, ip)
	}
	return out, nil
}

const ipamConfigureUsage = `Usage:
  calicoctl ipam configure [--strictaffinity=<true/false>] [--max-blocks-per-host=<number>]
                           [--kubevirt-ip-persistence=<Enabled/Disabled>] [--ip-cooldown-seconds=<seconds>]
                           [--config=<CONFIG>]

Options:
  -h --help                        Show this screen.
     --strictaffinity=<true/false> Set StrictAffinity to true/false. When StrictAffinity
                                   is true, borrowing IP addresses is not allowed.
     --max-blocks-per-host=<number> Set the maximum number of blocks that can be affine to a host.
     --kubevirt-ip-persistence=<Enabled/Disabled>
                                   KubeVirt VM address persistence (Kubernetes only): refused,
                                   calico-host's IPAM does not implement it.
     --ip-cooldown-seconds=<seconds>
                                   Minimum time between the release and the re-allocation of an
                                   address. Only 0 (reuse at once, what calico-host's IPAM does) is
                                   accepted; a cooldown is refused, as calico-host does not implement it.
  -c --config=<CONFIG>             Path to the datastore configuration.

At least one setting must be given.
`

// ipamSettings are the settings `ipam configure` was given (nil: not given).
type ipamSettings struct {
	strict    *bool
	maxBlocks *int
	cooldown  *int
}

func (c *cli) runIPAMConfigure(args []string) error {
	f := newFlags("ipam configure", ipamConfigureUsage)
	var cfg, strict, maxBlocks, kubevirt, cooldown string
	f.common(&cfg)
	f.str(&strict, "", "strictaffinity")
	f.str(&maxBlocks, "", "max-blocks-per-host")
	f.str(&kubevirt, "", "kubevirt-ip-persistence")
	f.str(&cooldown, "", "ip-cooldown-seconds")
	pos, err := f.parse(args, c.stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return failf("Invalid option: 'calicoctl ipam configure %s'. Use flag '--help' to read about a specific subcommand.", strings.Join(args, " "))
	}
	set, err := parseIPAMSettings(strict, maxBlocks, kubevirt, cooldown)
	if err != nil {
		return err
	}
	s, ic, err := c.ipamClient(cfg)
	if err != nil {
		return err
	}
	defer s.close()
	ctx, cancel := s.op()
	defer cancel()
	conf, err := ic.GetIPAMConfig(ctx)
	if err != nil {
		return err
	}
	if set.strict != nil {
		conf.StrictAffinity = *set.strict
	}
	if set.maxBlocks != nil {
		conf.MaxBlocksPerHost = *set.maxBlocks
	}
	if err := ic.SetIPAMConfig(ctx, conf); err != nil {
		return fmt.Errorf("writing IPAM configuration: %w", err)
	}
	set.report(c.stdout)
	return nil
}

// parseIPAMSettings checks the options of `ipam configure` as Project Calico does, refusing
// what calico-host's IPAM does not implement.
func parseIPAMSettings(strict, maxBlocks, kubevirt, cooldown string) (ipamSettings, error) {
	var set ipamSettings
	if strict != "" {
		v, err := strconv.ParseBool(strict)
		if err != nil {
			return set, failf("invalid value. Use true or false to set strictaffinity")
		}
		set.strict = &v
	}
	if maxBlocks != "" {
		v, err := strconv.Atoi(maxBlocks)
		if err != nil || v < 0 {
			return set, failf("invalid value for maxblockhost. Use a valid number (0 for no limit)")
		}
		set.maxBlocks = &v
	}
	if kubevirt != "" {
		if kubevirt != "Enabled" && kubevirt != "Disabled" {
			return set, failf("invalid value for --kubevirt-ip-persistence. Use Enabled or Disabled")
		}
		return set, failf("--kubevirt-ip-persistence: KubeVirt VM address persistence is not implemented by calico-host's IPAM (not supported by calico-host)")
	}
	if cooldown != "" {
		v, err := strconv.Atoi(cooldown)
		if err != nil {
			return set, failf("invalid value for --ip-cooldown-seconds. Use a number of seconds")
		}
		if v > 0 {
			return set, failf("--ip-cooldown-seconds=%d: IP cooldown is not implemented by calico-host's IPAM, which reuses released addresses at once (not supported by calico-host); only 0 is accepted", v)
		}
		if v == 0 {
			set.cooldown = &v
		}
	}
	if set.strict == nil && set.maxBlocks == nil && set.cooldown == nil {
		return set, failf("at least one configuration option must be specified")
	}
	return set, nil
}

func (set ipamSettings) report(out io.Writer) {
	if set.strict != nil {
		fmt.Fprintln(out, "Successfully set StrictAffinity to:", *set.strict)
	}
	if set.maxBlocks != nil {
		fmt.Fprintln(out, "Successfully set MaxBlocksPerHost to:", *set.maxBlocks)
	}
	if set.cooldown != nil {
		fmt.Fprintln(out, "Successfully set IPCooldownSeconds to:", *set.cooldown)
	}
}
