package config

import (
	"testing"

	"github.com/calico-host/calico-host/pkg/api"
)

// TestScopedSpecLayerPrecedence: a selector-scoped FelixConfiguration's set fields win over
// default's and lose to node.<host>'s, field by field (Project Calico's DatastorePerSelector
// between DatastoreGlobal and DatastorePerHost), and the environment still wins over all; the
// origin names the resource a value came from, also for the not-implemented report.
func TestScopedSpecLayerPrecedence(t *testing.T) {
	global := &api.FelixConfigurationSpec{LogSeverityScreen: "Info", ServiceLoopPrevention: "Reject",
		NATOutgoingExclusions: api.Str("IPPoolsOnly"), ReportingTTL: api.Dur(100e9)}
	scoped := &api.FelixConfigurationSpec{LogSeverityScreen: "Warning", ServiceLoopPrevention: "Disabled",
		NATOutgoingExclusions: api.Str("IPPoolsAndHostIPs"), BPFEnabled: api.Bool(true)}
	node := &api.FelixConfigurationSpec{LogSeverityScreen: "Debug"}
	env := Layer{Source: SourceEnv, Origin: "environment", Values: map[string]string{"SERVICELOOPPREVENTION": "Drop"}}
	c, problems := Resolve(env, ScopedSpecLayer(global, scoped, node, "h1", "gpu-nodes"))
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	for name, want := range map[string]any{
		"LogSeverityScreen": "Debug", "NATOutgoingExclusions": "IPPoolsAndHostIPs", "ServiceLoopPrevention": "Drop",
		"ReportingTTLSecs": global.ReportingTTL.Duration,
	} {
		if got := c.Value(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if len(c.NotImplemented) != 1 || c.NotImplemented[0].Object != "FelixConfiguration gpu-nodes" {
		t.Errorf("not implemented: %+v, want bpfEnabled from FelixConfiguration gpu-nodes", c.NotImplemented)
	}
	if dp := c.Dataplane(false); !dp.NATOutgoingExcludeHosts || dp.ServiceLoopPrevention != "Drop" {
		t.Errorf("dataplane: exclude hosts %v, service loop %q", dp.NATOutgoingExcludeHosts, dp.ServiceLoopPrevention)
	}
	c, _ = Resolve(SpecLayer(global, nil, "h1"))
	if dp := c.Dataplane(false); dp.NATOutgoingExcludeHosts || dp.ServiceLoopPrevention != "Reject" {
		t.Errorf("without the scoped config: exclude hosts %v, service loop %q", dp.NATOutgoingExcludeHosts, dp.ServiceLoopPrevention)
	}
}
