package policydiff

import (
	"fmt"
	"net/netip"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/selector"
)

// ruleMatches reports whether one rule matches the packet. ns is the namespace of the policy
// holding the rule ("" for global policies and profiles).
func (e *Evaluator) ruleMatches(r *api.Rule, ns string, p Packet) bool {
	fam := p.Family()
	if r.IPVersion != nil && *r.IPVersion != fam {
		return false
	}
	if !netsApply(r, fam) {
		return false
	}
	if r.Protocol != nil && !protoIs(*r.Protocol, p.Proto) {
		return false
	}
	if r.NotProtocol != nil && protoIs(*r.NotProtocol, p.Proto) {
		return false
	}
	if !icmpMatches(r.ICMP, p, false) || !icmpMatches(r.NotICMP, p, true) {
		return false
	}
	return e.entityMatches(&r.Source, r, ns, p, p.Src, p.SrcPort) &&
		e.entityMatches(&r.Destination, r, ns, p, p.Dst, p.DstPort)
}

// netsApply mirrors how felix renders a rule per IP family: a rule is left out of a family's
// ruleset when one of its nets lists (positive or negated) is not empty but holds no CIDR of
// that family, or when a negated list holds the family's catch-all.
func netsApply(r *api.Rule, fam int) bool {
	for _, l := range []struct {
		nets    []string
		negated bool
	}{{r.Source.Nets, false}, {r.Source.NotNets, true}, {r.Destination.Nets, false}, {r.Destination.NotNets, true}} {
		if len(l.nets) == 0 {
			continue
		}
		some := false
		for _, n := range l.nets {
			pfx, err := parseNet(n)
			if err != nil || familyOf(pfx.Addr()) != fam {
				continue
			}
			if l.negated && pfx.Bits() == 0 {
				return false
			}
			some = true
		}
		if !some {
			return false
		}
	}
	return true
}

func familyOf(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}

func protoIs(pr api.Protocol, n uint8) bool {
	v, ok := pr.NumberValue()
	return ok && v == n
}

// icmpMatches applies icmp (negated: notICMP). Both need an ICMP packet of the packet's family
// (ICMP for IPv4, ICMPv6 for IPv6): the type match is a header match.
func icmpMatches(f *api.ICMPFields, p Packet, negated bool) bool {
	if f == nil || f.Type == nil {
		return true
	}
	if p.Proto != p.icmpProto() {
		return false
	}
	hit := int(p.ICMPType) == *f.Type && (f.Code == nil || int(p.ICMPCode) == *f.Code)
	return hit != negated
}

// entityMatches applies a source or destination entity rule to one end of the packet.
func (e *Evaluator) entityMatches(er *api.EntityRule, r *api.Rule, ns string, p Packet, addr netip.Addr, port uint16) bool {
	if len(er.Nets) > 0 && !inNets(er.Nets, addr) {
		return false
	}
	if inNets(er.NotNets, addr) {
		return false
	}
	sel, notSel := entitySelectors(er, ns)
	if sel != nil && !e.selected(sel, addr) {
		return false
	}
	if notSel != nil && e.selected(notSel, addr) {
		return false
	}
	if len(er.Ports) > 0 && !e.portMatches(er.Ports, sel, r, p, addr, port) {
		return false
	}
	if len(er.NotPorts) > 0 && e.portMatches(er.NotPorts, sel, r, p, addr, port) {
		return false
	}
	return true
}

func inNets(nets []string, addr netip.Addr) bool {
	for _, n := range nets {
		if pfx, err := parseNet(n); err == nil && pfx.Contains(addr) {
			return true
		}
	}
	return false
}

func mustSel(text string) *selector.Selector {
	if text == "" {
		return nil
	}
	return selector.MustParse(text)
}

// entitySelectors are the positive and negated selectors an entity rule matches endpoints and
// network sets with. The positive one is formed as libcalico-go's GetEntityRuleSelector does:
// the selector, restricted to the policy's namespace (or to the namespaces the
// namespaceSelector picks) as soon as any selector field is set. Felix then folds the
// notSelector into a positive selector, "(sel) && (!(notSel))", and keeps it as a negated
// selector of its own only when there is no positive one (rule_scanner.go
// combineMatchesIfPossible).
func entitySelectors(er *api.EntityRule, ns string) (sel, notSel *selector.Selector) {
	pos := positiveSelector(er, ns)
	switch {
	case pos == "":
		return nil, mustSel(er.NotSelector)
	case er.NotSelector != "":
		return mustSel(fmt.Sprintf("(%s) && (!(%s))", pos, er.NotSelector)), nil
	}
	return mustSel(pos), nil
}

func positiveSelector(er *api.EntityRule, ns string) string {
	var nsSel string
	switch er.NamespaceSelector {
	case "":
		if ns != "" {
			nsSel = fmt.Sprintf("%s == '%s'", api.LabelNamespace, ns)
		}
	case "all()":
		nsSel = "has(" + api.LabelNamespace + ")"
	case "global()":
		nsSel = "!has(" + api.LabelNamespace + ")"
	default:
		panic(fmt.Sprintf("namespaceSelector %q is not modelled", er.NamespaceSelector))
	}
	sel := er.Selector
	if nsSel == "" || (sel == "" && er.NotSelector == "" && er.NamespaceSelector == "") {
		return sel
	}
	if sel == "" {
		return nsSel
	}
	return fmt.Sprintf("(%s) && (%s)", nsSel, sel)
}

// selected reports whether addr belongs to an endpoint (on any node; a host endpoint's
// expected IPs) or network set that the selector matches.
func (e *Evaluator) selected(sel *selector.Selector, addr netip.Addr) bool {
	for _, ep := range e.eps {
		if ep.owns(addr) && sel.Evaluate(ep.labels) {
			return true
		}
	}
	for _, h := range e.hosts {
		if inPrefixes(h.ips, addr) && sel.Evaluate(h.labels) {
			return true
		}
	}
	for _, s := range e.sets {
		if sel.Evaluate(s.labels) && inPrefixes(s.nets, addr) {
			return true
		}
	}
	return false
}

func inPrefixes(nets []netip.Prefix, addr netip.Addr) bool {
	for _, n := range nets {
		if n.Contains(addr) {
			return true
		}
	}
	return false
}

// portMatches: numeric ports and ranges match the port; a named port matches when addr and
// port belong to an endpoint picked by the entity's selector (all endpoints without one) with a
// port of that name and of the rule's protocol.
func (e *Evaluator) portMatches(ports []api.Port, sel *selector.Selector, r *api.Rule, p Packet, addr netip.Addr, port uint16) bool {
	if !p.hasPorts() {
		return false
	}
	for _, pt := range ports {
		if pt.PortName == "" {
			if port >= pt.MinPort && port <= pt.MaxPort {
				return true
			}
			continue
		}
		if e.namedPort(pt.PortName, sel, r, addr, port) {
			return true
		}
	}
	return false
}

func (e *Evaluator) namedPort(name string, sel *selector.Selector, r *api.Rule, addr netip.Addr, port uint16) bool {
	if r.Protocol == nil {
		panic("named port without a rule protocol is not modelled")
	}
	for _, ep := range e.eps {
		if !ep.owns(addr) || (sel != nil && !sel.Evaluate(ep.labels)) {
			continue
		}
		for _, wp := range ep.wep.Spec.Ports {
			n, _ := wp.Protocol.NumberValue()
			if wp.Name == name && wp.Port == port && protoIs(*r.Protocol, n) {
				return true
			}
		}
	}
	return false
}
