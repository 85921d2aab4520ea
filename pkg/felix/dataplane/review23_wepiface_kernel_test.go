package dataplane

import (
	"strings"
	"testing"
)

// TestKernelWorkloadEndpointOnHostInterface (review of issue 23): a workload endpoint of this
// host whose interfaceName is the host's uplink (eth0: valid per the interface name rule, not a
// workload prefix) makes felix apply the workload sysctls to the uplink: route_localnet=1 (with
// it, neighbours can reach services bound to 127.0.0.0/8, CVE-2020-8558's hole) and proxy_arp=1
// (the host answers ARP on the uplink for what it routes elsewhere). One object rewrites the
// host's own interface. (Project Calico's endpoint manager does the same.)
func TestKernelWorkloadEndpointOnHostInterface(t *testing.T) {
	tp := newTopology(t)
	sysctl := func(name string) string {
		return strings.TrimSpace(tp.host.Exec(t, "sysctl", "-n", "net.ipv4.conf.eth0."+name))
	}
	before := map[string]string{"route_localnet": sysctl("route_localnet"), "proxy_arp": sysctl("proxy_arp")}
	k, v := rawWEP("x", "eth0", "10.65.0.50", "", `"allow-all"`)
	f := startEtcdFelix(t, tp, map[string]string{k: v,
		"profiles/allow-all": `{"kind":"Profile","apiVersion":"projectcalico.org/v3","metadata":{"name":"allow-all"},
		  "spec":{"ingress":[{"action":"Allow"}],"egress":[{"action":"Allow"}]}}`})
	f.k.requireProgrammed()
	for name, was := range before {
		if got := sysctl(name); got != was {
			t.Errorf("net.ipv4.conf.eth0.%s = %s after a workload endpoint named eth0, was %s", name, got, was)
		}
	}
}
