package flowlog

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"time"
)

// Endpoint is one end of a connection as a flow names it. Name is the
// aggregated name: a workload's name (its generateName followed by "*"
// where it has one), a host endpoint's host name, a network set's name, or
// PrivateNetwork/PublicNetwork for an address nothing else claims.
type Endpoint struct {
	Type      EndpointType
	Name      string
	Namespace string // NoNamespace when it has none
	Labels    map[string]string
}

// NetworkEndpoint is the end for an address that is no endpoint and in no
// network set.
func NetworkEndpoint(a netip.Addr) Endpoint {
	a = a.Unmap()
	name := PublicNetwork
	for _, p := range privateNets {
		if p.Contains(a) {
			name = PrivateNetwork
		}
	}
	return Endpoint{Type: Network, Name: name, Namespace: NoNamespace}
}

var privateNets = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
}

// Update is what the collector knows of one connection, seen by one
// reporter, since its previous update. The counters are deltas. For
// reporter Dst, "in" is the original direction (towards the endpoint) and
// "out" the reply; for reporter Src the other way round (Project Calico's
// collector). A denied connection has no conntrack entry: its counters are
// the denied packets as NFLOG saw them.
type Update struct {
	Tuple    Tuple
	Source   Endpoint
	Dest     Endpoint
	Reporter Reporter
	Action   Action
	Policies Trace
	// Completed says the connection ended (its conntrack entry went or a
	// TCP connection reached TIME_WAIT); no update of it follows.
	Completed bool

	PacketsIn, PacketsOut, BytesIn, BytesOut int64
}

// aggKey is how flows aggregate, as Project Calico's collector aggregates
// for Goldmane: by both ends' aggregated names, namespaces and types, the
// protocol and destination port (never the addresses nor the source port),
// the reporter, the action and the enforced policy trace.
type aggKey struct {
	src, dst       endKey
	proto          uint8
	port           uint16
	reporter       Reporter
	action         Action
	enforcedLabels string
}

type endKey struct {
	typ      EndpointType
	name, ns string
}

// entry holds one flow's state: the connections still open, and how many
// connections started, completed, and were open when the interval began.
type entry struct {
	key                         aggKey
	enforced, pending           []PolicyHit
	srcLabels, dstLabels        map[string]string
	active                      map[Tuple]struct{}
	started, completed, atStart int64
	pktIn, pktOut, byIn, byOut  int64
	touched                     bool // updated this interval
	resetOnUpdate               bool // labels and policies restart with the next update
}

// Aggregator aggregates connection updates into flows between flushes. It
// is not safe for concurrent use: one collector goroutine owns it.
type Aggregator struct {
	start   time.Time
	max     int
	flows   map[aggKey]*entry
	dropped int
}

// NewAggregator starts aggregating at start. maxFlows bounds the flows held
// at once (0: no bound); an update that would start one more is counted as
// dropped (Dropped) and not recorded.
func NewAggregator(start time.Time, maxFlows int) *Aggregator {
	return &Aggregator{start: start, max: maxFlows, flows: map[aggKey]*entry{}}
}

// Dropped returns how many updates were dropped for the bound since the
// aggregator was made.
func (a *Aggregator) Dropped() int { return a.dropped }

// Len returns the number of flows held.
func (a *Aggregator) Len() int { return len(a.flows) }

// Feed records one update. An invalid update (no tuple, an action that is
// no verdict, a trace that does not validate) is refused.
func (a *Aggregator) Feed(u Update) error {
	if err := u.validate(); err != nil {
		return err
	}
	k := u.key()
	e := a.flows[k]
	if e == nil {
		if a.max > 0 && len(a.flows) >= a.max {
			a.dropped++
			return nil
		}
		e = newEntry(k)
		a.flows[k] = e
	}
	e.add(u)
	return nil
}

func (u Update) validate() error {
	switch {
	case !u.Tuple.Valid():
		return fmt.Errorf("flow update %v: invalid tuple", u.Tuple)
	case u.Action != Allow && u.Action != Deny:
		return fmt.Errorf("flow update %v: action %v is no verdict", u.Tuple, u.Action)
	case u.Reporter != Src && u.Reporter != Dst:
		return fmt.Errorf("flow update %v: reporter %v", u.Tuple, u.Reporter)
	}
	if err := u.Policies.Validate(); err != nil {
		return fmt.Errorf("flow update %v: %w", u.Tuple, err)
	}
	return nil
}

func (u Update) key() aggKey {
	return aggKey{
		src:            endKey{typ: u.Source.Type, name: u.Source.Name, ns: u.Source.Namespace},
		dst:            endKey{typ: u.Dest.Type, name: u.Dest.Name, ns: u.Dest.Namespace},
		proto:          u.Tuple.Proto,
		port:           u.Tuple.DstPort,
		reporter:       u.Reporter,
		action:         u.Action,
		enforcedLabels: label(u.Policies.Enforced),
	}
}

func newEntry(k aggKey) *entry {
	return &entry{key: k, active: map[Tuple]struct{}{}, resetOnUpdate: true}
}

func (e *entry) add(u Update) {
	if e.resetOnUpdate {
		e.srcLabels, e.dstLabels = maps.Clone(u.Source.Labels), maps.Clone(u.Dest.Labels)
		e.resetOnUpdate = false
	} else {
		e.srcLabels = intersect(e.srcLabels, u.Source.Labels)
		e.dstLabels = intersect(e.dstLabels, u.Dest.Labels)
	}
	e.enforced = cloneHits(u.Policies.Enforced)
	e.pending = cloneHits(u.Policies.Pending) // the latest pending trace wins
	t := u.Tuple
	if _, open := e.active[t]; !open {
		e.started++ // first seen: a connection that also completed now started now
	}
	if u.Completed {
		e.completed++
		delete(e.active, t)
	} else {
		e.active[t] = struct{}{}
	}
	e.pktIn += u.PacketsIn
	e.pktOut += u.PacketsOut
	e.byIn += u.BytesIn
	e.byOut += u.BytesOut
	e.touched = true
}

func intersect(have, with map[string]string) map[string]string {
	for k, v := range have {
		if w, ok := with[k]; !ok || w != v {
			delete(have, k)
		}
	}
	return have
}

// Flush returns the flows of the interval [start of interval, now), sorted
// by key, and starts the next interval at now. A flow is reported when it
// had an update in the interval or still has open connections (then with
// the counters of the interval, zero if idle); a flow with no open
// connection left is forgotten after it was reported.
func (a *Aggregator) Flush(now time.Time) []Flow {
	out := make([]Flow, 0, len(a.flows))
	for k, e := range a.flows {
		if e.touched || len(e.active) > 0 {
			out = append(out, e.flow(a.start, now))
		}
		if len(e.active) == 0 {
			delete(a.flows, k)
			continue
		}
		e.reset()
	}
	a.start = now
	sort.Slice(out, func(i, j int) bool { return flowLess(out[i], out[j]) })
	return out
}

func (e *entry) flow(start, end time.Time) Flow {
	k := e.key
	return Flow{
		StartTime: start,
		EndTime:   end,
		Key: Key{
			SourceName: k.src.name, SourceNamespace: k.src.ns, SourceType: k.src.typ,
			DestName: k.dst.name, DestNamespace: k.dst.ns, DestType: k.dst.typ,
			DestPort: k.port, Proto: ProtoName(k.proto),
			Reporter: k.reporter, Action: k.action,
			Policies: Trace{Enforced: cloneHits(e.enforced), Pending: cloneHits(e.pending)},
		},
		SourceLabels:            flatLabels(e.srcLabels),
		DestLabels:              flatLabels(e.dstLabels),
		PacketsIn:               e.pktIn,
		PacketsOut:              e.pktOut,
		BytesIn:                 e.byIn,
		BytesOut:                e.byOut,
		NumConnectionsStarted:   e.started,
		NumConnectionsCompleted: e.completed,
		NumConnectionsLive:      e.atStart + e.started,
	}
}

func (e *entry) reset() {
	e.started, e.completed, e.atStart = 0, 0, int64(len(e.active))
	e.pktIn, e.pktOut, e.byIn, e.byOut = 0, 0, 0, 0
	e.touched = false
	e.resetOnUpdate = true
}

func flatLabels(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

func flowLess(a, b Flow) bool {
	ka, kb := []string{a.SourceNamespace, a.SourceName, a.DestNamespace, a.DestName, a.Proto},
		[]string{b.SourceNamespace, b.SourceName, b.DestNamespace, b.DestName, b.Proto}
	if c := slices.Compare(ka, kb); c != 0 {
		return c < 0
	}
	if a.DestPort != b.DestPort {
		return a.DestPort < b.DestPort
	}
	if a.Reporter != b.Reporter {
		return a.Reporter < b.Reporter
	}
	if a.Action != b.Action {
		return a.Action < b.Action
	}
	return label(a.Policies.Enforced) < label(b.Policies.Enforced)
}
