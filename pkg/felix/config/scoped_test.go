package config

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
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
		"LogSeverityScreen": zerolog.DebugLevel, "NATOutgoingExclusions": true, "ServiceLoopPrevention": rules.LoopDrop,
		"ReportingTTLSecs": global.ReportingTTL.Duration,
	} {
		if got := c.Value(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if len(c.NotImplemented) != 1 || c.NotImplemented[0].Object != "FelixConfiguration gpu-nodes" {
		t.Errorf("not implemented: %+v, want bpfEnabled from FelixConfiguration gpu-nodes", c.NotImplemented)
	}
	c, _ = Resolve(SpecLayer(global, nil, "h1"))
	if c.NATOutgoingExcludeHosts || c.ServiceLoopPrevention != rules.LoopReject {
		t.Errorf("without the scoped config: exclude hosts %v, service loop %v", c.NATOutgoingExcludeHosts, c.ServiceLoopPrevention)
	}
}
