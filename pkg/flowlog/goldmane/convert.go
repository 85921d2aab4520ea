package goldmane

import (
	"github.com/calico-host/calico-host/pkg/flowlog"
	pb "github.com/calico-host/calico-host/pkg/flowlog/goldmane/goldmanepb"
)

// ToProto converts a flow record to Goldmane's message. The enumerations
// share Goldmane's numbers; times become seconds since the epoch.
func ToProto(f flowlog.Flow) *pb.Flow {
	return &pb.Flow{
		Key: &pb.FlowKey{
			SourceName:      f.SourceName,
			SourceNamespace: f.SourceNamespace,
			SourceType:      pb.EndpointType(f.SourceType),
			DestName:        f.DestName,
			DestNamespace:   f.DestNamespace,
			DestType:        pb.EndpointType(f.DestType),
			DestPort:        int64(f.DestPort),
			Proto:           f.Proto,
			Reporter:        pb.Reporter(f.Reporter),
			Action:          pb.Action(f.Action),
			Policies: &pb.PolicyTrace{
				EnforcedPolicies: hitsToProto(f.Policies.Enforced),
				PendingPolicies:  hitsToProto(f.Policies.Pending),
			},
		},
		StartTime:               f.StartTime.Unix(),
		EndTime:                 f.EndTime.Unix(),
		SourceLabels:            f.SourceLabels,
		DestLabels:              f.DestLabels,
		PacketsIn:               f.PacketsIn,
		PacketsOut:              f.PacketsOut,
		BytesIn:                 f.BytesIn,
		BytesOut:                f.BytesOut,
		NumConnectionsStarted:   f.NumConnectionsStarted,
		NumConnectionsCompleted: f.NumConnectionsCompleted,
		NumConnectionsLive:      f.NumConnectionsLive,
	}
}

func hitsToProto(hits []flowlog.PolicyHit) []*pb.PolicyHit {
	out := make([]*pb.PolicyHit, len(hits))
	for i, h := range hits {
		out[i] = hitToProto(h)
	}
	return out
}

func hitToProto(h flowlog.PolicyHit) *pb.PolicyHit {
	p := &pb.PolicyHit{
		Kind: pb.PolicyKind(h.Kind), Namespace: h.Namespace, Name: h.Name, Tier: h.Tier,
		Action: pb.Action(h.Action), PolicyIndex: h.PolicyIndex, RuleIndex: h.RuleIndex,
	}
	if h.Trigger != nil {
		p.Trigger = hitToProto(*h.Trigger)
	}
	return p
}
