package collector

import (
	"net/netip"
	"time"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/conntrack"
	"github.com/calico-host/calico-host/pkg/flowlog/ruleid"
)

// conn is what the collector knows of one connection: the latest path of
// each direction, conntrack's absolute counters and what of them was
// reported, and the NFLOG'd packets of directions without a conntrack
// entry (denied).
type conn struct {
	tuple    flowlog.Tuple
	dirs     [2]dirState // ingress, egress
	tracked  bool        // conntrack holds it
	over     bool
	lastSeen time.Time

	orig, reply       counters // conntrack, absolute
	origRep, replyRep counters // of those, reported
}

type dirState struct {
	path     ruleid.Path
	logged   counters // NFLOG'd packets since the last report
	reported bool     // reported at least once (the start was counted)
}

type counters struct{ packets, bytes uint64 }

func dirIndex(d ruleid.Direction) int {
	if d == ruleid.Egress {
		return 1
	}
	return 0
}

func (cn *conn) seen(d ruleid.Direction, p ruleid.Path, length int, now time.Time) {
	ds := &cn.dirs[dirIndex(d)]
	ds.path = p
	ds.logged.packets++
	ds.logged.bytes += uint64(length)
	cn.lastSeen = now
}

func (cn *conn) counted(e conntrack.Entry) {
	cn.tracked = true
	cn.orig = counters{e.OrigPackets, e.OrigBytes}
	cn.reply = counters{e.ReplyPackets, e.ReplyBytes}
	if e.Finished() {
		cn.over = true
	}
}

func (cn *conn) reported() {
	cn.origRep, cn.replyRep = cn.orig, cn.reply
	for i := range cn.dirs {
		cn.dirs[i].logged = counters{}
		if cn.dirs[i].path != nil {
			cn.dirs[i].reported = true
		}
	}
}

func delta(now, before counters) counters {
	if now.packets < before.packets || now.bytes < before.bytes { // counters were reset
		return now
	}
	return counters{now.packets - before.packets, now.bytes - before.bytes}
}

// updates returns the connection's update for each reporter: Dst for the
// ingress path when the destination is local, Src for the egress path when
// the source is.
func (c *Collector) updates(cn *conn) []flowlog.Update {
	src, srcLocal := c.endpoint(cn.tuple.Src)
	dst, dstLocal := c.endpoint(cn.tuple.Dst)
	var out []flowlog.Update
	for _, d := range []ruleid.Direction{ruleid.Ingress, ruleid.Egress} {
		ds := &cn.dirs[dirIndex(d)]
		local := dstLocal
		if d == ruleid.Egress {
			local = srcLocal
		}
		if ds.path == nil || !local || (ds.reported && !cn.changed(ds) && !cn.over) {
			continue
		}
		u, ok := c.update(cn, d, src, dst)
		if ok {
			out = append(out, u)
		}
	}
	return out
}

func (cn *conn) changed(ds *dirState) bool {
	return ds.logged != (counters{}) || cn.orig != cn.origRep || cn.reply != cn.replyRep
}

func (c *Collector) update(cn *conn, d ruleid.Direction, src, dst flowlog.Endpoint) (flowlog.Update, bool) {
	ds := &cn.dirs[dirIndex(d)]
	local := cn.tuple.Dst
	if d == ruleid.Egress {
		local = cn.tuple.Src
	}
	enforced, err := ds.path.Enforced(func(tier string) (ruleid.Policy, bool) {
		return c.cfg.Endpoints.Trigger(local, d, tier)
	})
	if err != nil {
		c.stats.UnattributedPaths++
		c.cfg.Log.Debug().Err(err).Stringer("tuple", cn.tuple).Msg("path not attributable")
		return flowlog.Update{}, false
	}
	verdict, _ := ds.path.Verdict()
	u := flowlog.Update{
		Tuple: cn.tuple, Source: src, Dest: dst, Reporter: d.Reporter(), Action: verdict.Action,
		Policies: flowlog.Trace{Enforced: enforced}, Completed: cn.over,
	}
	if c.cfg.Pending != nil {
		if hits, ok := c.cfg.Pending(cn.tuple, d); ok {
			u.Policies.Pending = hits
		}
	}
	// With a conntrack entry, "in" is the original direction for the
	// destination's report and the reply for the source's. Without one, a
	// denied connection's traffic is the packets NFLOG saw; an allowed one
	// waits for conntrack (which will count its first packets too).
	in, out := delta(cn.orig, cn.origRep), delta(cn.reply, cn.replyRep)
	if !cn.tracked {
		in, out = counters{}, counters{}
		if verdict.Action == flowlog.Deny {
			in = ds.logged
		}
	}
	if d == ruleid.Egress {
		in, out = out, in
	}
	u.PacketsIn, u.BytesIn = int64(in.packets), int64(in.bytes)
	u.PacketsOut, u.BytesOut = int64(out.packets), int64(out.bytes)
	return u, true
}

func (c *Collector) endpoint(a netip.Addr) (flowlog.Endpoint, bool) {
	ep, local, ok := c.cfg.Endpoints.Lookup(a)
	if !ok {
		return flowlog.NetworkEndpoint(a), false
	}
	return ep, local
}
