package collector

import (
	"net/netip"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/conntrack"
	"github.com/calico-host/calico-host/pkg/flowlog/nflog"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
)

// Endpoints is what the collector asks of felix's model.
type Endpoints interface {
	// Lookup returns what is at address a: an endpoint (local says it is
	// on this host), a network set, or ok false for anything else (then the
	// flow names the network, flowlog.NetworkEndpoint).
	Lookup(a netip.Addr) (ep flowlog.Endpoint, local, ok bool)
	// Trigger returns the last policy of tier that applies, in direction
	// dir, to the local endpoint at address a: the policy an end of tier
	// names.
	Trigger(a netip.Addr, dir ruleid.Direction, tier string) (ruleid.Policy, bool)
}

// Pending evaluates a tuple with the staged policies enforced, for the
// local endpoint that applies direction dir; ok false leaves the pending
// trace empty (FlowLogsPolicyEvaluationMode None, or not a local workload).
type Pending func(t flowlog.Tuple, dir ruleid.Direction) (hits []flowlog.PolicyHit, ok bool)

// Config of a Collector.
type Config struct {
	Endpoints Endpoints
	Pending   Pending // nil: no pending traces
	// AgeTimeout is how long a connection that conntrack does not hold
	// (denied packets) lives after its last packet; felix's is 10 s.
	AgeTimeout time.Duration
	// MaxConnections bounds the connections tracked at once (0:
	// DefaultMaxConnections); packets of new connections beyond it are
	// counted as dropped.
	MaxConnections int
	// MaxFlows bounds the aggregator (flowlog.NewAggregator).
	MaxFlows int
	Log      zerolog.Logger
}

// DefaultAgeTimeout is felix's.
const DefaultAgeTimeout = 10 * time.Second

// DefaultMaxConnections is the kernel's usual conntrack table size
// (nf_conntrack_max on a host with 8 GiB or more).
const DefaultMaxConnections = 262144

// Collector joins NFLOG paths and conntrack counters per connection and
// aggregates them into flows. One goroutine owns it (see Run).
type Collector struct {
	cfg       Config
	table     *ruleid.Table
	prevTable *ruleid.Table
	paths     *ruleid.Assembler
	conns     map[flowlog.Tuple]*conn
	agg       *flowlog.Aggregator
	stats     Stats
	subs      []*nflog.Subscriber // Run's, for their counts
}

// Stats counts what the collector could not use.
type Stats struct {
	UnknownPrefixes   uint64 // NFLOG prefixes in neither the current nor the previous table
	DroppedPackets    uint64 // packets of connections beyond MaxConnections
	UnattributedPaths uint64 // paths whose hits could not be made (no trigger for an end of tier)
	RejectedUpdates   uint64 // updates the aggregator refused (a bug: logged)
}

// New returns a collector whose first interval starts at start.
func New(cfg Config, start time.Time) *Collector {
	if cfg.AgeTimeout == 0 {
		cfg.AgeTimeout = DefaultAgeTimeout
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	return &Collector{
		cfg:   cfg,
		table: ruleid.NewTable(), prevTable: ruleid.NewTable(),
		paths: ruleid.NewAssembler(cfg.MaxConnections),
		conns: map[flowlog.Tuple]*conn{},
		agg:   flowlog.NewAggregator(start, cfg.MaxFlows),
	}
}

// SetTable installs the prefix table of the ruleset just applied; the
// previous one still answers for messages logged before.
func (c *Collector) SetTable(t *ruleid.Table) { c.prevTable, c.table = c.table, t }

// Stats returns the counts so far.
func (c *Collector) Stats() Stats { return c.stats }

// Counts are a collector's sizes and its NFLOG subscribers' counts (while Run runs), for
// metrics: on the collector's goroutine, as every method.
type Counts struct {
	NFLOG       nflog.Stats // both groups summed
	Flows       int         // flows the aggregator holds
	FlowsLost   int         // flows the aggregator dropped at its limit (flowlog.Aggregator.Dropped)
	Connections int
}

// Counts returns the collector's counts now.
func (c *Collector) Counts() Counts {
	out := Counts{Flows: c.agg.Len(), FlowsLost: c.agg.Dropped(), Connections: len(c.conns)}
	for _, s := range c.subs {
		st := s.Stats()
		out.NFLOG.Packets += st.Packets
		out.NFLOG.ParseErrors += st.ParseErrors
		out.NFLOG.Overruns += st.Overruns
	}
	return out
}

// Connections returns the number of connections tracked.
func (c *Collector) Connections() int { return len(c.conns) }

// OnPacket records one NFLOG packet.
func (c *Collector) OnPacket(p nflog.Packet, now time.Time) {
	r, ok := c.table.Lookup(p.Prefix)
	if !ok {
		if r, ok = c.prevTable.Lookup(p.Prefix); !ok {
			c.stats.UnknownPrefixes++
			return
		}
	}
	path, done := c.paths.Add(p.Tuple, r)
	if !done {
		return
	}
	cn := c.conns[p.Tuple]
	if cn == nil {
		if len(c.conns) >= c.cfg.MaxConnections {
			c.stats.DroppedPackets++
			return
		}
		cn = &conn{tuple: p.Tuple}
		c.conns[p.Tuple] = cn
	}
	cn.seen(r.Direction, path, p.Length, now)
	if c.cfg.Log.GetLevel() <= zerolog.TraceLevel {
		c.cfg.Log.Trace().Stringer("tuple", p.Tuple).Str("prefix", p.Prefix).Int("hits", len(path)).Msg("NFLOG path")
	}
}

// OnDump records a conntrack dump: counters of the connections it holds;
// connections it no longer holds are over.
func (c *Collector) OnDump(entries []conntrack.Entry) {
	inDump := make(map[flowlog.Tuple]struct{}, len(entries))
	for _, e := range entries {
		t := policyTuple(e)
		cn := c.conns[t]
		if cn == nil {
			continue
		}
		inDump[t] = struct{}{}
		cn.counted(e)
	}
	for t, cn := range c.conns {
		if _, ok := inDump[t]; !ok && cn.tracked {
			cn.over = true
		}
	}
}

// policyTuple is the tuple the filter hooks (and so NFLOG) saw: after
// destination NAT, which conntrack's reply tuple holds reversed.
func policyTuple(e conntrack.Entry) flowlog.Tuple {
	t := e.Orig
	if e.DstNAT {
		t.Dst, t.DstPort = e.Reply.Src, e.Reply.SrcPort
	}
	return t
}

// Flush reports every connection's changes since the last flush to the
// aggregator and returns the flows of the interval ending at now.
// Connections that are over are reported once more, completed, and
// forgotten; unfinished paths open since before the last flush are dropped
// (ruleid.Assembler.Expire).
func (c *Collector) Flush(now time.Time) []flowlog.Flow {
	c.paths.Expire()
	for t, cn := range c.conns {
		if !cn.tracked && now.Sub(cn.lastSeen) > c.cfg.AgeTimeout {
			cn.over = true
		}
		for _, u := range c.updates(cn) {
			if err := c.agg.Feed(u); err != nil {
				c.stats.RejectedUpdates++
				c.cfg.Log.Error().Err(err).Msg("flow update refused")
			}
		}
		cn.reported()
		if cn.over {
			delete(c.conns, t)
			c.paths.Forget(t)
		}
	}
	return c.agg.Flush(now)
}
