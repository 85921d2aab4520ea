package calicoctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

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
  calicoctl ipam check [--config=<CONFIG>] [--output=<FILE>]

Options:
  -h --help                Show this screen.
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
	var cfg, output string
	var ignored bool
	f.common(&cfg)
	f.str(&output, "", "o", "output")
	f.boolean(&ignored, "show-all-ips", "show-problem-ips")
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
	printCheckReport(c.stdout, r)
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

func printCheckReport(out io.Writer, r *ipam.CheckReport) {
	fmt.Fprintf(out, "\nFound %d IPAM blocks, %d handles and %d affinities.\n", r.Blocks, r.Handles, r.Affinities)
	fmt.Fprintf(out, "IPAM blocks record %d allocations.\n\n", r.AllocatedIPs)
	section := func(n int, what string, lines func(emit func(string, ...any))) {
		fmt.Fprintf(out, "Found %d %s.\n", n, what)
		lines(func(format string, args ...any) { fmt.Fprintf(out, "  "+format+"\n", args...) })
	}
	section(len(r.LeakedIPs), "IPs that are leaked (allocated with no handle that can release them)", func(emit func(string, ...any)) {
		for _, l := range r.LeakedIPs {
			emit("%s in block %s (handle %q)", l.IP, l.Block, l.Handle)
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
  calicoctl ipam configure --strictaffinity=<true/false> [--max-blocks-per-host=<number>] [--config=<CONFIG>]

Options:
  -h --help                        Show this screen.
     --strictaffinity=<true/false> Set StrictAffinity to true/false. When StrictAffinity
                                   is true, borrowing IP addresses is not allowed.
     --max-blocks-per-host=<number> Set the maximum number of blocks that can be affine to a host.
  -c --config=<CONFIG>             Path to the datastore configuration.
`

func (c *cli) runIPAMConfigure(args []string) error {
	f := newFlags("ipam configure", ipamConfigureUsage)
	var cfg, strict, maxBlocks string
	f.common(&cfg)
	f.str(&strict, "", "strictaffinity")
	f.str(&maxBlocks, "", "max-blocks-per-host")
	pos, err := f.parse(args, c.stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 || strict == "" {
		return failf("Invalid option: 'calicoctl ipam configure %s'. Use flag '--help' to read about a specific subcommand.", strings.Join(args, " "))
	}
	strictVal, err := strconv.ParseBool(strict)
	if err != nil {
		return failf("Invalid value for --strictaffinity: %q (use true or false)", strict)
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
	conf.StrictAffinity = strictVal
	if maxBlocks != "" {
		if conf.MaxBlocksPerHost, err = strconv.Atoi(maxBlocks); err != nil || conf.MaxBlocksPerHost < 0 {
			return failf("Invalid value for --max-blocks-per-host: %q (use a number, 0 for no limit)", maxBlocks)
		}
	}
	if err := ic.SetIPAMConfig(ctx, conf); err != nil {
		return fmt.Errorf("writing IPAM configuration: %w", err)
	}
	fmt.Fprintf(c.stdout, "Successfully set StrictAffinity to: %t\n", strictVal)
	if maxBlocks != "" {
		fmt.Fprintf(c.stdout, "Successfully set MaxBlocksPerHost to: %d\n", conf.MaxBlocksPerHost)
	}
	return nil
}
