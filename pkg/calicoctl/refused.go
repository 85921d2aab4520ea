package calicoctl

import (
	"fmt"
	"strings"
)

// opt is an option a refused command accepts (so that --help and Project Calico's command
// lines parse) before refusing.
type opt struct {
	names  []string
	isBool bool
}

func strOpt(names ...string) opt  { return opt{names: names} }
func boolOpt(names ...string) opt { return opt{names: names, isBool: true} }

// refusedCommand is a Project Calico command calico-host does not implement: it accepts
// Calico's options and --help, then fails, saying why.
func refusedCommand(path, summary, reason string, opts ...opt) *command {
	_, name, _ := cutLastWord(path)
	return &command{name: name, summary: summary, refused: reason, run: refusedRun(path, reason, opts)}
}

func refusedRun(path, reason string, opts []opt) func(*cli, []string) error {
	return func(c *cli, args []string) error {
		usage := fmt.Sprintf("Usage:\n  calicoctl %s [options]\n\nNot supported by calico-host: %s.\n", path, reason)
		f := newFlags(path, usage)
		var cfg, s string
		var b bool
		f.common(&cfg)
		for _, o := range opts {
			if o.isBool {
				f.boolean(&b, o.names...)
			} else {
				f.str(&s, "", o.names...)
			}
		}
		if _, err := c.parseFlags(f, args); err != nil {
			return err
		}
		return refusal(path, reason)
	}
}

// refusal is the error of a command or option calico-host refuses.
func refusal(what, reason string) error {
	return failf("calicoctl %s is not supported by calico-host: %s", strings.TrimSpace(what), reason)
}

func init() {
	registerSub("node", "Calico node management.", refusedCommand("node run",
		"Run the Calico node container image (refused by calico-host).",
		"calico-host runs as the systemd services calico-startup, calico-confd and calico-felix, not as a container: configure /etc/calico/*.toml and use systemctl",
		strOpt("ip"), strOpt("ip6"), strOpt("as"), strOpt("name"), strOpt("ip-autodetection-method"),
		strOpt("ip6-autodetection-method"), strOpt("log-dir"), strOpt("node-image"), strOpt("backend"),
		strOpt("felix-config"), boolOpt("dryrun"), boolOpt("init-system"), boolOpt("no-default-ippools")))
	registerSub("cluster", "Access cluster information.", refusedCommand("cluster diags",
		"Collect cluster diagnostics (refused by calico-host; see 'node diags').",
		"it collects from Kubernetes; run 'calicoctl node diags' on each host instead",
		strOpt("since"), strOpt("max-logs"), strOpt("max-parallelism"), strOpt("focus-nodes"),
		boolOpt("skip-temp-dir-cleanup")))
}
