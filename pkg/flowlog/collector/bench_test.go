package collector

import (
	"net/netip"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/flowlog"
	"github.com/calico-host/calico-host/pkg/flowlog/conntrack"
	"github.com/calico-host/calico-host/pkg/flowlog/nflog"
)

// BenchmarkConnection is the collector's user-space cost per allowed connection: its two
// NFLOG hits (a pass, then the allow), its entry in a conntrack dump, its report at a
// flush, in batches of 10,000 connections from 100 clients to one local server (so the
// aggregator folds them into 100-odd flows). One op is one connection.
func BenchmarkConnection(b *testing.B) {
	r := newRules(b)
	c := newCollector(r)
	const batch = 10000
	tuples := make([]flowlog.Tuple, batch)
	for i := range tuples {
		tuples[i] = flowlog.Tuple{Src: netip.AddrFrom4([4]byte{10, 65, 1, byte(i % 100)}), Dst: serverIP,
			Proto: flowlog.ProtoTCP, SrcPort: uint16(10000 + i), DstPort: 8080}
	}
	pass, allow := r.pass.Prefix(), r.allow.Prefix()
	now := t0
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		entries := make([]conntrack.Entry, 0, batch)
		for _, tu := range tuples[:min(batch, b.N-done)] {
			c.OnPacket(nflog.Packet{Group: 1, Prefix: pass, Length: 60, Tuple: tu}, now)
			c.OnPacket(nflog.Packet{Group: 1, Prefix: allow, Length: 60, Tuple: tu}, now)
			entries = append(entries, conntrack.Entry{Orig: tu, OrigPackets: 5, OrigBytes: 400, ReplyPackets: 4, ReplyBytes: 300})
		}
		c.OnDump(entries)
		now = now.Add(time.Second)
		c.Flush(now)
		c.OnDump(nil) // all closed: the next flush forgets them
		now = now.Add(time.Second)
		c.Flush(now)
	}
}
