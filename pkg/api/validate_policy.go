package api

import (
	"fmt"
	"strings"
)

func validatePolicy(e *errs, p PolicySpecView) {
	e.selector("spec.selector", p.Selector)
	e.selector("spec.namespaceSelector", p.NamespaceSel)
	e.selector("spec.serviceAccountSelector", p.ServiceAcctSel)
	for i, t := range p.Types {
		validateOneOf(e, fmt.Sprintf("spec.types[%d]", i), t, PolicyTypeIngress, PolicyTypeEgress)
	}
	if p.PreDNAT && p.DoNotTrack {
		e.add("spec.preDNAT", "preDNAT and doNotTrack cannot both be true")
	}
	if (p.PreDNAT || p.DoNotTrack) && !p.ApplyOnForward {
		e.add("spec.applyOnForward", "applyOnForward must be true when preDNAT or doNotTrack is true")
	}
	if p.PreDNAT && len(p.Egress) > 0 {
		e.add("spec.egress", "a preDNAT policy cannot have egress rules")
	}
	validateRules(e, "spec.ingress", p.Ingress)
	validateRules(e, "spec.egress", p.Egress)
}

func validateRules(e *errs, field string, rules []Rule) {
	for i := range rules {
		validateRule(e, fmt.Sprintf("%s[%d]", field, i), &rules[i])
	}
}

func validateRule(e *errs, f string, r *Rule) {
	validateOneOf(e, f+".action", r.Action, ActionAllow, ActionDeny, ActionLog, ActionPass)
	version := 0
	if r.IPVersion != nil {
		version = *r.IPVersion
		if version != 4 && version != 6 {
			e.add(f+".ipVersion", "ipVersion must be 4 or 6, not %d", version)
			version = 0
		}
	}
	validateProtocol(e, f+".protocol", r.Protocol)
	validateProtocol(e, f+".notProtocol", r.NotProtocol)
	if !e.write {
		// A reader keeps a rule whose nets or ICMP protocol contradict its ipVersion: such a
		// rule matches nothing (calc leaves it out, as Project Calico's felix does), whereas
		// refusing the whole policy would let through what its other rules deny.
		version = 0
	}
	validateICMP(e, f+".icmp", r.ICMP, r.Protocol, version)
	validateICMP(e, f+".notICMP", r.NotICMP, r.Protocol, version)
	validateEntity(e, f+".source", &r.Source, r.Protocol, version)
	validateEntity(e, f+".destination", &r.Destination, r.Protocol, version)
}

func validateProtocol(e *errs, field string, p *Protocol) {
	if p == nil {
		return
	}
	if p.IsNum {
		if p.Number == 0 {
			e.add(field, "protocol number must be between 1 and 255")
		}
		return
	}
	if _, ok := protocolNumbers[strings.ToLower(p.Name)]; !ok || !isCanonicalProtocolName(p.Name) {
		e.add(field, "unknown protocol %q (use TCP, UDP, ICMP, ICMPv6, SCTP, UDPLite or a number 1-255)", p.Name)
	}
}

func isCanonicalProtocolName(s string) bool {
	switch s {
	case "TCP", "UDP", "ICMP", "ICMPv6", "SCTP", "UDPLite", "tcp", "udp", "icmp", "icmpv6", "sctp", "udplite":
		return true
	}
	return false
}

func validateICMP(e *errs, field string, icmp *ICMPFields, proto *Protocol, version int) {
	if icmp == nil {
		return
	}
	n := uint8(0)
	if proto != nil {
		n, _ = proto.NumberValue()
	}
	if n != 1 && n != 58 {
		e.add(field, "ICMP fields require protocol ICMP or ICMPv6")
	}
	if (n == 1 && version == 6) || (n == 58 && version == 4) {
		e.add(field, "protocol %s does not match ipVersion %d", proto, version)
	}
	if icmp.Type != nil && (*icmp.Type < 0 || *icmp.Type > 254) {
		e.addValue(field+".type", *icmp.Type, "ICMP type %d must be between 0 and 254", *icmp.Type)
	}
	if icmp.Code != nil {
		if icmp.Type == nil {
			e.add(field+".code", "ICMP code requires a type")
		} else if *icmp.Code < 0 || *icmp.Code > 255 {
			e.addValue(field+".code", *icmp.Code, "ICMP code %d must be between 0 and 255", *icmp.Code)
		}
	}
}

func validateEntity(e *errs, f string, er *EntityRule, proto *Protocol, version int) {
	validateNets(e, f+".nets", er.Nets, version)
	validateNets(e, f+".notNets", er.NotNets, version)
	e.selector(f+".selector", er.Selector)
	e.selector(f+".notSelector", er.NotSelector)
	e.selector(f+".namespaceSelector", er.NamespaceSelector)
	if er.ServiceAccounts != nil {
		e.selector(f+".serviceAccounts.selector", er.ServiceAccounts.Selector)
	}
	validatePorts(e, f+".ports", er.Ports, proto)
	validatePorts(e, f+".notPorts", er.NotPorts, proto)
}

func validatePorts(e *errs, field string, ports []Port, proto *Protocol) {
	if len(ports) == 0 {
		return
	}
	if proto == nil || !proto.SupportsPorts() {
		e.add(field, "ports are only allowed with protocol TCP, UDP, SCTP or UDPLite")
	}
	for i, p := range ports {
		if p.PortName == "" && p.MinPort > p.MaxPort {
			e.addNamed(fmt.Sprintf("%s[%d]", field, i), "Port", p.MaxPort, "port range invalid")
		}
		if p.PortName != "" && !validPortName(p.PortName) {
			e.addNamed(fmt.Sprintf("%s[%d]", field, i), "Port", p.PortName, "invalid named port %q", p.PortName)
		}
	}
}

func validPortName(s string) bool {
	return len(s) <= 63 && dns1123Label.MatchString(strings.ToLower(s))
}
