package config

import (
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
)

// TestFlowLogsParams: flow logs are off by default and each of the Goldmane server, the local
// reporter and the file turns them on; the values are typed, and bad ones (a flush interval
// under 1 s, a server that is not host:port, a relative directory, a file count of 0) are
// problems that leave the default.
func TestFlowLogsParams(t *testing.T) {
	def, problems := Resolve()
	if len(problems) != 0 || def.FlowLogsOn() || def.FlowLogsFlushInterval != 300*time.Second || !def.FlowLogsEvaluateStaged ||
		def.FlowLogsFileDirectory != "/var/log/calico/flowlogs" || def.FlowLogsFileMaxFiles != 5 || def.FlowLogsFileMaxFileSizeMB != 100 {
		t.Fatalf("defaults: %v %+v", problems, def)
	}
	server, mode, reporter := "goldmane:7443", "None", "Enabled"
	for name, l := range map[string]Layer{
		"server":   SpecLayer(&api.FelixConfigurationSpec{FlowLogsGoldmaneServer: &server, FlowLogsPolicyEvaluationMode: &mode}, nil, "h1"),
		"reporter": SpecLayer(&api.FelixConfigurationSpec{FlowLogsLocalReporter: &reporter}, nil, "h1"),
		"file":     EnvLayer([]string{"FELIX_FLOWLOGSFILEENABLED=true", "FELIX_FLOWLOGSFLUSHINTERVAL=2", "FELIX_TYPHACAFILE=/etc/ca.pem"}),
	} {
		c, problems := Resolve(l)
		if len(problems) != 0 || len(c.NotImplemented) != 0 || !c.FlowLogsOn() {
			t.Errorf("%s: problems %v, not implemented %v, on %v", name, problems, c.NotImplemented, c.FlowLogsOn())
		}
	}
	c, _ := Resolve(EnvLayer([]string{"FELIX_FLOWLOGSFLUSHINTERVAL=2", "FELIX_TYPHACAFILE=/etc/ca.pem"}))
	if c.FlowLogsFlushInterval != 2*time.Second || c.TyphaCAFile != "/etc/ca.pem" {
		t.Errorf("flush %v, CA %q", c.FlowLogsFlushInterval, c.TyphaCAFile)
	}
	c, problems = Resolve(EnvLayer([]string{"FELIX_FLOWLOGSFLUSHINTERVAL=0.5", "FELIX_FLOWLOGSGOLDMANESERVER=goldmane",
		"FELIX_FLOWLOGSFILEDIRECTORY=flows", "FELIX_FLOWLOGSFILEMAXFILES=0"}))
	if len(problems) != 4 || c.FlowLogsOn() || c.FlowLogsFlushInterval != def.FlowLogsFlushInterval ||
		c.FlowLogsFileDirectory != def.FlowLogsFileDirectory || c.FlowLogsFileMaxFiles != def.FlowLogsFileMaxFiles {
		t.Errorf("bad values taken: problems %v, config %+v", problems, c)
	}
}
