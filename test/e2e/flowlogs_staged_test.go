package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

const flowWebAllow = `apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: web-allow}
spec:
  selector: role == 'web'
  types: [Ingress]
  ingress:
  - {action: Allow, protocol: TCP, source: {selector: role == 'client'}, destination: {ports: [80]}}
`

// flowStagedLockdown would deny what web-allow allows (its order puts it first in the tier).
const flowStagedLockdown = `apiVersion: projectcalico.org/v3
kind: StagedGlobalNetworkPolicy
metadata: {name: lockdown}
spec:
  order: 1
  selector: role == 'web'
  types: [Ingress]
  ingress:
  - {action: Deny, protocol: TCP, source: {selector: role == 'client'}, destination: {ports: [80]}}
`

// TestFlowLogsStaged: a StagedGlobalNetworkPolicy that would deny an allowed connection is not
// enforced (the traffic still flows) and the destination's flow log line carries it in
// policies.pending (staged kind, tier, name, rule index, deny) while policies.enforced names the
// policy that allowed it.
func TestFlowLogsStaged(t *testing.T) {
	requireBinaries(t)
	s := newSystemWith(t, topo.Options{Hosts: 2, Mode: topo.ModeBGP}, topo.StartOptions{Felix: true}, func(f *topo.Fabric) error {
		for _, h := range f.Hosts {
			h.FelixEnv = append(h.FelixEnv, "FELIX_FLOWLOGSFILEENABLED=true", "FELIX_FLOWLOGSFILEDIRECTORY="+filepath.Join(h.Dir, "flowlogs"),
				fmt.Sprintf("FELIX_FLOWLOGSFLUSHINTERVAL=%d", int(flowFlush.Seconds())))
		}
		return nil
	})
	web := s.workload(s.Host(1), "web", map[string]string{"role": "web"}, 80)
	client := s.workload(s.Host(2), "client", map[string]string{"role": "client"}, 80)
	other := s.workload(s.Host(2), "other", map[string]string{"role": "other"}, 80)
	s.apply(flowWebAllow)
	s.apply(flowStagedLockdown)
	s.expect(30*time.Second, tcp(other, web, 80, false)) // host 1 enforces web-allow
	s.expect(30*time.Second, tcp(client, web, 80, true))

	id := flowID(flowlog.Dst, client, web, "tcp", 80)
	want := "Allow GlobalNetworkPolicy default/web-allow rule 0 Allow pending StagedGlobalNetworkPolicy default/lockdown rule 0 Deny"
	s.eventually(10*flowFlush+20*time.Second, "the staged deny pending in host 1's flow log", func() error {
		s.expect(30*time.Second, tcp(client, web, 80, true)) // still flows; a new connection for the next flush
		var got []string
		for _, f := range readFlows(t, s.Host(1).Dir) {
			if fmt.Sprintf("%v %s>%s %s/%d", f.Reporter, f.SourceName, f.DestName, f.Proto, f.DestPort) != id {
				continue
			}
			d := describe(f) + " pending" + describeHits(f.Policies.Pending)
			if d == want {
				return nil
			}
			got = append(got, d)
		}
		return fmt.Errorf("%s: got %q, want %q", id, got, want)
	})
}

// describeHits names each hit as describe names the last enforced one.
func describeHits(hits []flowlog.PolicyHit) string {
	out := ""
	for _, h := range hits {
		out += fmt.Sprintf(" %v %s/%s rule %d %v", h.Kind, h.Tier, h.Name, h.RuleIndex, h.Action)
	}
	return out
}
