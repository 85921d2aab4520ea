package trace

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/sim"
)

// Print writes the trace for people: the connection, then for the enforced and the pending
// verdict each host's decisions (tier -> policy -> rule -> action, per direction) and what
// became of the packet there. steps adds every rule the packet met (the simulator's path).
func Print(w io.Writer, t *Trace, steps bool) {
	fmt.Fprintf(w, "Connection: %s\n", t.connection())
	fmt.Fprintf(w, "  from %s\n  to   %s\n", describePlace(t.Src), describePlace(t.Dst))
	for _, v := range []Verdict{t.Enforced, t.Pending} {
		fmt.Fprintf(w, "\n%s: %s\n", verdictTitle(v.Scope), verdictWord(v.Allowed))
		for _, h := range v.Hops {
			printHop(w, t, h, steps)
		}
	}
}

func (t *Trace) connection() string {
	dst := t.Dst.Addr.String()
	if t.Proto != flowlog.ProtoICMP && t.Proto != flowlog.ProtoICMPv6 {
		dst = fmt.Sprintf("%s port %d", dst, t.Port)
	}
	return fmt.Sprintf("%s %s -> %s", flowlog.ProtoName(t.Proto), t.Src.Addr, dst)
}

func describePlace(p Place) string {
	switch {
	case p.Host == "":
		return p.Addr.String() + " (no endpoint of the datastore: the network)"
	case p.Workload():
		return fmt.Sprintf("workload endpoint %s (%s) on host %s", p.Name, p.Iface, p.Host)
	}
	return fmt.Sprintf("host %s (%s)", p.Host, p.Name)
}

func verdictTitle(s Scope) string {
	if s == Pending {
		return "Pending (staged policies enforced)"
	}
	return "Enforced"
}

func verdictWord(allowed bool) string {
	if allowed {
		return "ALLOWED"
	}
	return "DENIED"
}

func printHop(w io.Writer, t *Trace, h Hop, steps bool) {
	if h.Unreached {
		fmt.Fprintf(w, "  host %s (not reached: dropped before; what it would do):\n", h.Host)
	} else {
		fmt.Fprintf(w, "  host %s:\n", h.Host)
	}
	for _, warn := range h.Warnings {
		fmt.Fprintf(w, "    warning: %s\n", warn)
	}
	printPath(w, "egress of "+t.Src.Name, h.Egress)
	printPath(w, "ingress of "+t.Dst.Name, h.Ingress)
	fmt.Fprintf(w, "    packet: %s\n", fate(h))
	if steps {
		for _, s := range h.Result.Steps() {
			fmt.Fprintf(w, "      %s\n", s)
		}
	}
}

func printPath(w io.Writer, what string, p ruleid.Path) {
	if len(p) == 0 {
		return
	}
	parts := make([]string, len(p))
	for i, r := range p {
		parts[i] = describeRule(r)
	}
	fmt.Fprintf(w, "    %s: %s\n", what, strings.Join(parts, "; "))
}

// describeRule prints a rule as tier -> policy -> rule -> action.
func describeRule(r ruleid.RuleID) string {
	action := strings.ToLower(r.Action.String())
	switch {
	case r.Kind == flowlog.KindEndOfTier:
		return fmt.Sprintf("tier %s -> end of tier -> %s", r.Tier, action)
	case r.Kind == flowlog.KindProfile && r.Name == ruleid.NoMatchProfile:
		return "profiles -> no profile matched -> " + action
	case r.Kind == flowlog.KindProfile:
		return fmt.Sprintf("profile %s -> rule %d -> %s", r.Name, r.Index, action)
	}
	name := r.Name
	if r.Namespace != "" {
		name = r.Namespace + "/" + r.Name
	}
	return fmt.Sprintf("tier %s -> %s %s -> rule %d -> %s", r.Tier, resourceKind(r.Kind), name, r.Index, action)
}

// resourceKind is the kind of the resource a policy is (flows name a Calico NetworkPolicy
// CalicoNetworkPolicy, as Goldmane does).
func resourceKind(k flowlog.PolicyKind) string {
	if k == flowlog.KindCalicoNetworkPolicy {
		return "NetworkPolicy"
	}
	return k.String()
}

// fate says what became of the packet on the host, and which rule dropped it when no policy
// decision names it.
func fate(h Hop) string {
	switch h.Fate {
	case sim.FateSent:
		return "forwarded via " + h.OIF
	case sim.FateDelivered:
		return "delivered to the host"
	case sim.FateDropped:
		if s, ok := dropStep(h.Result); ok {
			return fmt.Sprintf("dropped by %s rule %d (%s)", s.Chain, s.Rule, cmp.Or(s.Comment, s.Text))
		}
	}
	return h.Fate.String()
}

func dropStep(r *sim.Result) (sim.Step, bool) {
	steps := r.Steps()
	for i := len(steps) - 1; i >= 0; i-- {
		if v := steps[i].Verdict; v.Kind == nft.VerdictDrop && steps[i].Rule >= 0 {
			return steps[i], true
		}
	}
	return sim.Step{}, false
}
