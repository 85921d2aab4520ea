package calicoctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/calico-host/calico-host/pkg/birdctl"
)

// `calicoctl node status`: whether felix runs, and the BGP sessions of the local BIRD, read from
// its control socket, in Project Calico's format. BIRD 2 runs both families in one daemon, so
// one socket answers for the IPv4 and the IPv6 tables.

func init() {
	registerSub("node", "Calico node management.", &command{name: "status", summary: "View the current status of a Calico node.", run: (*cli).runNodeStatus})
}

const nodeStatusUsage = `Usage:
  calicoctl node status [--allow-version-mismatch]

Options:
  -h --help                    Show this screen.
     --allow-version-mismatch  Accepted for compatibility; versions are not checked.

Description:
  Check the status of the Calico node instance.  This includes the status and
  uptime of the node instance, and BGP peering states.

  BIRD's control socket is /var/run/calico/bird.ctl, else /var/run/bird/bird.ctl
  ($CALICOCTL_BIRD_SOCKET overrides both).
`

// birdSockets are where calico-bird.service and Debian's bird.service put BIRD's socket.
var birdSockets = []string{"/var/run/calico/bird.ctl", "/var/run/bird/bird.ctl"}

// birdQueryTimeout bounds the whole conversation with BIRD.
const birdQueryTimeout = 5 * time.Second

func (c *cli) runNodeStatus(args []string) error {
	f := newFlags("node status", nodeStatusUsage)
	pos, err := c.parseFlags(f, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return failf("Invalid option: 'calicoctl node status %s'. Use flag '--help' to read about a specific subcommand.", strings.Join(pos, " "))
	}
	if !felixRunning("/proc") {
		return failf("Calico process is not running.")
	}
	fmt.Fprintln(c.stdout, "Calico process is running.")
	sockets := birdSockets
	if s, ok := c.env("CALICOCTL_BIRD_SOCKET"); ok && s != "" {
		sockets = []string{s}
	}
	protos, err := queryBIRD(c.ctx, sockets)
	switch {
	case errors.Is(err, birdctl.ErrNotRunning):
		fmt.Fprint(c.stdout, "\nThe BGP backend process (BIRD) is not running.\n\n")
		return nil
	case err != nil:
		return fmt.Errorf("Error executing command: %w", err)
	}
	peers := birdPeerRows(protos)
	for _, family := range []int{4, 6} {
		printBIRDPeers(c.stdout, family, peers)
	}
	fmt.Fprintln(c.stdout)
	return nil
}

// queryBIRD asks the first BIRD that answers for its protocols.
func queryBIRD(ctx context.Context, sockets []string) ([]birdctl.Protocol, error) {
	ctx, cancel := context.WithTimeout(ctx, birdQueryTimeout)
	defer cancel()
	var errs []error
	for _, s := range sockets {
		cl, err := birdctl.Dial(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		defer cl.Close()
		return cl.Protocols(ctx)
	}
	return nil, errors.Join(errs...)
}

// felixRunning reports whether a felix process runs: calico-felix, or calico-node -felix.
func felixRunning(procDir string) bool {
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		data, err := os.ReadFile(filepath.Join(procDir, e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		switch filepath.Base(argv[0]) {
		case "calico-felix":
			return true
		case "calico-node":
			for _, a := range argv[1:] {
				if a == "-felix" {
					return true
				}
			}
		}
	}
	return false
}

// birdPeerRow is one row of the status table.
type birdPeerRow struct {
	family             int
	address, typ       string
	state, since, info string
}

// birdPeerNameRE matches calico-confd's (and Project Calico's) BGP protocol names.
var birdPeerNameRE = regexp.MustCompile(`^(Global|Node|Mesh)_(.+?)(_port_\d+)?$`)

var birdPeerTypes = map[string]string{"Global": "global", "Mesh": "node-to-node mesh", "Node": "node specific"}

// birdFractionalSeconds is the ".162" BIRD 2 appends to times.
var birdFractionalSeconds = regexp.MustCompile(`(\d{2}:\d{2}:\d{2})\.\d+$`)

// birdPeerRows picks the sessions confd configured out of BIRD's protocols.
func birdPeerRows(protos []birdctl.Protocol) []birdPeerRow {
	var out []birdPeerRow
	for _, p := range protos {
		m := birdPeerNameRE.FindStringSubmatch(p.Name)
		if p.Proto != "BGP" || m == nil {
			continue
		}
		addr, ok := birdPeerAddress(p.NeighborAddress, m[2])
		if !ok {
			continue
		}
		fam := 4
		if addr.Is6() {
			fam = 6
		}
		out = append(out, birdPeerRow{family: fam, address: addr.String(), typ: birdPeerTypes[m[1]], state: p.State,
			since: birdFractionalSeconds.ReplaceAllString(p.Since, "$1"), info: p.Info})
	}
	return out
}

// birdPeerAddress is BIRD's neighbor address, or else the address encoded in the protocol name.
func birdPeerAddress(neighbor, fromName string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(neighbor); err == nil {
		return a, true
	}
	for _, sep := range []string{".", ":"} {
		if a, err := netip.ParseAddr(strings.ReplaceAll(fromName, "_", sep)); err == nil {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// printBIRDPeers prints one family's table, as Project Calico's calicoctl does.
func printBIRDPeers(out io.Writer, family int, peers []birdPeerRow) {
	fmt.Fprintf(out, "\nIPv%d BGP status\n", family)
	var rows [][]string
	for _, p := range peers {
		if p.family == family {
			rows = append(rows, []string{p.address, p.typ, p.state, p.since, p.info})
		}
	}
	if len(rows) == 0 {
		fmt.Fprintf(out, "No IPv%d peers found.\n", family)
		return
	}
	boxTable(out, []string{"PEER ADDRESS", "PEER TYPE", "STATE", "SINCE", "INFO"}, rows)
}
