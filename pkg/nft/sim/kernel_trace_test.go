package sim_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nftrace"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
	"github.com/calico-host/calico-host/pkg/nft/kernel"
	"github.com/calico-host/calico-host/pkg/nft/sim"
	"github.com/calico-host/calico-host/pkg/nft/vm"
)

// traceTables are the test's own tables, never given to the simulator. At
// priority -1000 they drop every packet that is not a probe (DSCP AF11,
// TTL 77, a nonzero IPv4 id or IPv6 flow label: the host's own answers to
// probes, such as echo replies, have none of them), so that nothing else
// reaches the tables under test, and mark the probes for tracing; at
// -199, just after conntrack, a traced rule reports conntrack's verdict.
func traceTables() string {
	var b strings.Builder
	b.WriteString("table inet simtrace {\n")
	for _, h := range []string{"prerouting", "output"} {
		fmt.Fprintf(&b, "\tchain %s {\n\t\ttype filter hook %s priority -1000; policy accept;\n", h, h)
		b.WriteString("\t\tip dscp != af11 drop\n\t\tip ttl != 77 drop\n\t\tip id 0 drop\n")
		b.WriteString("\t\tip6 dscp != af11 drop\n\t\tip6 hoplimit != 77 drop\n\t\tip6 flowlabel 0 drop\n")
		b.WriteString("\t\tmeta nftrace set 1\n\t}\n")
		fmt.Fprintf(&b, "\tchain %s_ct {\n\t\ttype filter hook %s priority -199; policy accept;\n\t\tmeta nftrace set 1\n\t}\n", h, h)
	}
	b.WriteString("}\ntable arp simtrace {\n\tchain input {\n\t\ttype filter hook input priority -1000; policy accept;\n")
	b.WriteString("\t\tarp saddr ether & ff:ff:ff:ff:00:00 != 02:5e:00:00:00:00 drop\n\t\tmeta nftrace set 1\n\t}\n}\n")
	return b.String()
}

// The marks of a probe: DSCP AF11 (as the TOS byte) and TTL 77.
const (
	probeDSCP = 10 << 2
	probeTTL  = 77
)

func startTrace(t *testing.T, ns *nstest.NS) *nftrace.Reader {
	r, err := nftrace.Listen(ns.FD)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	out, err := ns.Try("sh", "-c", "printf '%s' \"$0\" | nft -f -", traceTables())
	if err != nil {
		t.Fatalf("loading the trace tables: %v\n%s", err, out)
	}
	return r
}

// packetKey names a probe in trace events: its IPv4 id, IPv6 flow label
// or ARP sender id, per family.
type packetKey struct {
	nfproto uint32
	id      uint32
}

func keyOfEvent(e nftrace.Event) (packetKey, bool) {
	b := e.Network
	switch e.NFProto {
	case unix.NFPROTO_IPV4:
		if len(b) >= 6 && b[1]&0xfc == probeDSCP {
			return packetKey{e.NFProto, uint32(binary.BigEndian.Uint16(b[4:]))}, true
		}
	case unix.NFPROTO_IPV6:
		if len(b) >= 4 && (b[0]<<4|b[1]>>4)&0xfc == probeDSCP {
			return packetKey{e.NFProto, binary.BigEndian.Uint32(b) & 0xfffff}, true
		}
	case unix.NFPROTO_ARP:
		if len(b) >= 14 && b[8] == 2 && b[9] == 0x5e {
			return packetKey{e.NFProto, uint32(binary.BigEndian.Uint16(b[12:]))}, true
		}
	}
	return packetKey{}, false
}

// groupEvents sorts events by probe: the first event of each base chain's
// run carries the packet's headers and the trace id its other events
// share.
func groupEvents(evs []nftrace.Event) map[packetKey][]nftrace.Event {
	out := map[packetKey][]nftrace.Event{}
	byID := map[uint32]packetKey{}
	for _, e := range evs {
		if e.Network != nil {
			k, ok := keyOfEvent(e)
			if !ok {
				delete(byID, e.ID)
				continue
			}
			byID[e.ID] = k
		}
		if k, ok := byID[e.ID]; ok {
			out[k] = append(out[k], e)
		}
	}
	return out
}

// step is one trace event in comparable form.
type step struct {
	kind, table, chain string
	rule               int
	verdict            string
	mark               uint32
}

func (s step) String() string {
	return fmt.Sprintf("%s %s %s#%d %s mark %#x", s.kind, s.table, s.chain, s.rule, s.verdict, s.mark)
}

var familyOf = map[uint8]nft.Family{
	unix.NFPROTO_INET: nft.FamilyInet, unix.NFPROTO_IPV4: nft.FamilyIP, unix.NFPROTO_IPV6: nft.FamilyIP6, unix.NFPROTO_ARP: nft.FamilyARP,
}

// kernelSteps converts a probe's events, less those of the trace tables;
// ct is conntrack's verdict as the first -199 chain reported it.
func kernelSteps(evs []nftrace.Event, handles handleMap) (steps []step, ct *nftrace.Event, err error) {
	for i, e := range evs {
		if e.Table == "simtrace" {
			if strings.HasSuffix(e.Chain, "_ct") && ct == nil && e.Network != nil {
				ct = &evs[i]
			}
			continue
		}
		s := step{table: nft.TableID{Family: familyOf[e.Family], Name: e.Table}.String(), chain: e.Chain, rule: -1, mark: e.Mark}
		if e.HasHandle {
			idx, ok := handles[ruleRef{s.table, e.Chain, e.Handle}]
			if !ok {
				return nil, nil, fmt.Errorf("rule handle %d of %s %s is not in the ruleset", e.Handle, s.table, e.Chain)
			}
			s.rule = idx
		}
		s.kind, s.verdict = eventKind(e)
		steps = append(steps, s)
	}
	return steps, ct, nil
}

// eventKind is what an event records: a policy, a return (a return
// verdict, or the end of a chain: continue without a rule handle) or a
// rule. Linux 6.x labels returns NFT_TRACETYPE_RULE since it masks the
// verdict code with NF_VERDICT_MASK before telling them apart
// (__nft_trace_verdict), so the label is not used for them.
func eventKind(e nftrace.Event) (kind, verdict string) {
	if e.Type == unix.NFT_TRACETYPE_POLICY {
		return "policy", map[uint32]string{1: "accept", 0: "drop"}[e.Policy]
	}
	v, _ := nft.VerdictFromVM(vm.Verdict{Code: e.Verdict, Chain: e.VerdictChain})
	if v.Kind == nft.VerdictReturn || v.Kind == nft.VerdictContinue && !e.HasHandle {
		return "return", v.String()
	}
	return "rule", v.String()
}

func simSteps(res *sim.Result) []step {
	var out []step
	for _, s := range res.Steps() {
		out = append(out, step{kind: s.Kind.String(), table: s.Table.String(), chain: s.Chain, rule: s.Rule, verdict: s.Verdict.String(), mark: s.Mark})
	}
	return out
}

// ctInput is conntrack's verdict on a probe as the kernel reported it,
// for the simulator: no report (the probe never reached conntrack) or an
// untracked one (a notrack statement of the ruleset: the simulator runs it
// itself) are New.
func ctInput(ct *nftrace.Event) sim.Conntrack {
	switch {
	case ct == nil || ct.CTState == uint32(nft.CTStateUntracked) && ct.HasCT:
		return sim.Conntrack{State: nft.CTStateNew}
	case !ct.HasCT:
		return sim.Conntrack{State: nft.CTStateInvalid}
	}
	return sim.Conntrack{State: nft.CTState(ct.CTState), Status: nft.CTStatus(ct.CTStatus)}
}

// ruleRef is a rule by table, chain and kernel handle.
type ruleRef struct {
	table, chain string
	handle       uint64
}

type handleMap map[ruleRef]int

// ruleLoc is a rule by table, chain and index.
type ruleLoc struct {
	table, chain string
	rule         int
}

// listRuleset reads the handles and counters of the rules in the
// namespace.
func listRuleset(t *testing.T, ns *nstest.NS) (handleMap, map[ruleLoc]uint64) {
	t.Helper()
	k, err := kernel.New(kernel.Config{NetNS: ns.FD})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	handles, counters := handleMap{}, map[ruleLoc]uint64{}
	next := map[[2]string]int{}
	for _, fam := range familyOf {
		err := k.RawRules(context.Background(), nft.TableID{Family: fam}, func(r kernel.RawRule) {
			if r.Err != nil {
				t.Errorf("%s %s: %v", r.Table, r.Chain, r.Err)
			}
			table := nft.TableID{Family: fam, Name: r.Table}.String()
			idx := next[[2]string{table, r.Chain}]
			next[[2]string{table, r.Chain}] = idx + 1
			handles[ruleRef{table, r.Chain, r.Handle}] = idx
			for _, x := range r.Exprs {
				if c, ok := x.(vm.Counter); ok {
					counters[ruleLoc{table, r.Chain, idx}] += c.Packets
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return handles, counters
}
