package config

import (
	"crypto/tls"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/rules"
	"github.com/calico-host/calico-host/pkg/nft"
)

// Choice is one legal value of a KindOneOf parameter: its spelling in Project Calico (matched
// case-insensitively) and the Go value its Config field holds.
type Choice struct {
	Name  string
	Value any
}

// texts are choices whose Go values are their names.
func texts(names ...string) []Choice {
	out := make([]Choice, len(names))
	for i, n := range names {
		out[i] = Choice{n, n}
	}
	return out
}

// The legal values of the enum parameters, each list the only one: parsing, --help, felix.toml
// and the checks of datastore values all read it.
var (
	logSeverities = []Choice{
		{"Trace", zerolog.TraceLevel}, {"Debug", zerolog.DebugLevel}, {"Info", zerolog.InfoLevel},
		{"Warning", zerolog.WarnLevel}, {"Error", zerolog.ErrorLevel}, {"Fatal", zerolog.FatalLevel},
	}
	clientAuthTypes = []Choice{
		{"RequireAndVerifyClientCert", tls.RequireAndVerifyClientCert}, {"RequireAnyClientCert", tls.RequireAnyClientCert},
		{"VerifyClientCertIfGiven", tls.VerifyClientCertIfGiven}, {"NoClientCert", tls.NoClientCert},
	}
	endpointToHostActions = []Choice{{"DROP", rules.ActionDrop}, {"RETURN", rules.ActionReturn}, {"ACCEPT", rules.ActionAccept}}
	// denyActions: NftablesFilterDenyAction REJECT is FilterDenyReject.
	denyActions = []Choice{{"DROP", false}, {"REJECT", true}}
	// natExclusions: IPPoolsAndHostIPs is NATOutgoingExcludeHosts.
	natExclusions = []Choice{{"IPPoolsOnly", false}, {"IPPoolsAndHostIPs", true}}
	loopActions   = []Choice{{"Drop", rules.LoopDrop}, {"Reject", rules.LoopReject}, {"Disabled", rules.LoopDisabled}}
	// spoofingChoices: WorkloadSourceSpoofing Any is true.
	spoofingChoices = []Choice{{"Disabled", false}, {"Any", true}}
	enabledDisabled = []Choice{{"Enabled", true}, {"Disabled", false}}
	// forwardingChoices: IPForwarding Disabled is IPForwardingDisabled.
	forwardingChoices = []Choice{{"Enabled", false}, {"Disabled", true}}
	routeSources      = []Choice{{"CalicoIPAM", calc.RouteSourceCalicoIPAM}, {"WorkloadIPs", calc.RouteSourceWorkloadIPs}}
	// clusterRouteChoices are programClusterRoutes' values: the pools felix programs (calc's table).
	clusterRouteChoices = func() []Choice {
		out := make([]Choice, len(calc.ClusterRouteValues))
		for i, v := range calc.ClusterRouteValues {
			out[i] = Choice{v.Name, v.Value}
		}
		return out
	}()
	// failsafeProtocols are the protocols of failsafe ports.
	failsafeProtocols = []Choice{{"tcp", nft.ProtoTCP}, {"udp", nft.ProtoUDP}, {"sctp", nft.ProtoSCTP}}
)

// names lists the choices' spellings.
func names(cs []Choice) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}
