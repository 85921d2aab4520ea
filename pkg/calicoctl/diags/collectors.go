package diags

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"strings"
	"time"
)

// units are calico-host's systemd units.
var units = []string{"calico-startup", "calico-confd", "calico-felix", "calico-bird"}

// collectors is everything a bundle holds, in order.
func collectors() []collector {
	return []collector{
		{name: "versions", run: collectVersions},
		{name: "systemd units and journals", timeout: 60 * time.Second, run: collectUnits},
		{name: "nftables ruleset", run: commandsCollector("nftables", cmd("ruleset.nft", "nft", "-a", "list", "ruleset"))},
		{name: "routes and rules", run: commandsCollector("network",
			cmd("ipv4_route.txt", "ip", "-4", "route", "show", "table", "all"),
			cmd("ipv6_route.txt", "ip", "-6", "route", "show", "table", "all"),
			cmd("ipv4_rule.txt", "ip", "-4", "rule", "show"),
			cmd("ipv6_rule.txt", "ip", "-6", "rule", "show"))},
		{name: "neighbours", run: commandsCollector("network",
			cmd("ipv4_neigh.txt", "ip", "-4", "neigh", "show"),
			cmd("ipv6_neigh.txt", "ip", "-6", "neigh", "show"))},
		{name: "links and addresses", run: commandsCollector("network",
			cmd("links.txt", "ip", "-d", "link", "show"),
			cmd("addresses.txt", "ip", "-d", "address", "show"))},
		{name: "BIRD configuration", run: collectBIRDConfig},
		{name: "BIRD status", timeout: 10 * time.Second, run: collectBIRDStatus},
		{name: "configuration files", run: collectConfigFiles},
		{name: "felix and confd metrics", timeout: 10 * time.Second, run: collectMetrics},
		{name: "datastore objects of this host", run: collectDatastore},
		{name: "log files", run: collectLogs},
	}
}

// command is a command whose output becomes a file.
type command struct {
	file string
	name string
	args []string
}

func cmd(file, name string, args ...string) command {
	return command{file: file, name: name, args: args}
}

// commandsCollector runs commands in turn; each output (with its error, if any) is a file in dir.
func commandsCollector(dir string, cmds ...command) func(context.Context, *Host) ([]File, error) {
	return func(ctx context.Context, h *Host) ([]File, error) {
		var files []File
		var errs []error
		for _, c := range cmds {
			f, err := h.commandFile(ctx, path.Join(dir, c.file), c)
			files = append(files, f)
			errs = append(errs, err)
		}
		return files, joinErrs(errs)
	}
}

// commandFile runs a command into a file headed by the command line. A failure is written in
// the file and returned.
func (h *Host) commandFile(ctx context.Context, name string, c command) (File, error) {
	out, err := h.command(ctx, c.name, c.args...)
	data := fmt.Appendf(nil, "# %s %s\n", c.name, strings.Join(c.args, " "))
	data = append(data, out...)
	if err != nil {
		data = fmt.Appendf(data, "\n# failed: %v\n", err)
	}
	return File{Name: name, Data: data}, err
}

// collectVersions records calicoctl's version, the kernel and OS, and the versions of
// calico-host's binaries and the tools it drives. A binary the host lacks is noted, not an error.
func collectVersions(ctx context.Context, h *Host) ([]File, error) {
	files := []File{{Name: "versions/calicoctl.txt", Data: []byte(h.Versions + "\n")}}
	var errs []error
	for _, c := range []command{
		cmd("uname.txt", "uname", "-a"),
		cmd("calico-startup.txt", "calico-startup", "--version"),
		cmd("calico-confd.txt", "calico-confd", "--version"),
		cmd("calico-felix.txt", "calico-felix", "--version"),
		cmd("bird.txt", "bird", "--version"),
		cmd("nft.txt", "nft", "--version"),
		cmd("iproute2.txt", "ip", "-V"),
	} {
		f, err := h.commandFile(ctx, path.Join("versions", c.file), c)
		files = append(files, f)
		if !errors.Is(err, errMissing) {
			errs = append(errs, err)
		}
	}
	if data, err := h.readFile("/etc/os-release"); err == nil {
		files = append(files, File{Name: "versions/os-release", Data: data})
	}
	return files, joinErrs(errs)
}

// collectUnits records each unit's status and journal. Without systemctl or journalctl (a
// container, another init system) a note in the bundle says what could not be collected.
func collectUnits(ctx context.Context, h *Host) ([]File, error) {
	var files []File
	var errs []error
	for _, tool := range []string{"systemctl", "journalctl"} {
		if !h.has(tool) {
			files = append(files, File{Name: "units/NOTE-no-" + tool + ".txt",
				Data: fmt.Appendf(nil, "%s is not available on this host: %s not collected.\n", tool, map[string]string{
					"systemctl": "the units' status was", "journalctl": "the units' journals were"}[tool])})
		}
	}
	for _, u := range units {
		if h.has("systemctl") {
			f, err := h.commandFile(ctx, "units/"+u+".status.txt", cmd("", "systemctl", "status", u+".service", "--no-pager", "--full", "--lines=0"))
			if !isExitStatus(err) { // status exits 3 for a stopped unit, 4 for an unknown one
				errs = append(errs, err)
			}
			files = append(files, f)
		}
		if h.has("journalctl") {
			f, err := h.commandFile(ctx, "units/"+u+".journal.txt", cmd("", "journalctl", "-u", u+".service", "--no-pager", "-o", "short-iso", "-n", "20000"))
			files = append(files, f)
			errs = append(errs, err)
		}
	}
	return files, joinErrs(errs)
}

// has reports whether the host has a command.
func (h *Host) has(name string) bool {
	lookPath := h.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	_, err := lookPath(name)
	return err == nil
}

// isExitStatus: the command ran and exited non-zero (its output says why).
func isExitStatus(err error) bool {
	var ee *exec.ExitError
	return err == nil || errors.As(err, &ee)
}
