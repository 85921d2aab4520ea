package kernel

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/calico-host/calico-host/pkg/nft"
	"github.com/calico-host/calico-host/pkg/nft/internal/nstest"
)

var setFuzzRounds = flag.Int("setfuzz.rounds", 12, "rounds of TestKernelSetBuilderFuzz per set shape (seeds 1..n)")

// fuzzShape is a kind of set the renderers build from user data, with a generator of random
// elements in a small part of its key space (so that they overlap, nest and touch) and of keys
// to probe.
type fuzzShape struct {
	name   string
	family nft.Family
	fields []fuzzField
}

// fuzzField makes one field's random ranges and probe values.
type fuzzField struct {
	typ   nft.DataType
	span  func(r *rand.Rand) nft.Element // a random range (or single value) of the field
	probe func(r *rand.Rand) nft.Key     // a random value of the field near the ranges
}

func (s fuzzShape) typ() nft.DataType {
	ts := make([]nft.DataType, len(s.fields))
	for i, f := range s.fields {
		ts[i] = f.typ
	}
	return nft.Concat(ts...)
}

// addrField: prefixes of 10.65.0.0/22 (or fd5c::/118), from the whole block to single
// addresses, and arbitrary ranges.
func addrField(v6 bool) fuzzField {
	base, bits, typ := netip.MustParseAddr("10.65.0.0"), 32, nft.TypeIPv4Addr
	if v6 {
		base, bits, typ = netip.MustParseAddr("fd5c::"), 128, nft.TypeIPv6Addr
	}
	at := func(i int) netip.Addr {
		b := base.AsSlice()
		b[len(b)-2], b[len(b)-1] = byte(i>>8), byte(i)
		a, _ := netip.AddrFromSlice(b)
		return a
	}
	return fuzzField{typ: typ,
		span: func(r *rand.Rand) nft.Element {
			if r.IntN(3) == 0 {
				lo := r.IntN(1024)
				return nft.RangeElem(nft.AddrKey(at(lo)), nft.AddrKey(at(lo+r.IntN(1024-lo))))
			}
			p, _ := at(r.IntN(1024)).Prefix(bits - r.IntN(11))
			return nft.PrefixElem(p)
		},
		probe: func(r *rand.Rand) nft.Key { return nft.AddrKey(at(r.IntN(1100))) },
	}
}

// portField: ports and ranges around 20-60 and up to 65535.
func portField() fuzzField {
	vals := func(r *rand.Rand) uint16 {
		if r.IntN(4) == 0 {
			return uint16(65530 + r.IntN(6))
		}
		return uint16(20 + r.IntN(40))
	}
	return fuzzField{typ: nft.TypeInetService,
		span: func(r *rand.Rand) nft.Element {
			a, b := vals(r), vals(r)
			if r.IntN(2) == 0 {
				b = a
			}
			return nft.PortRangeElem(min(a, b), max(a, b))
		},
		probe: func(r *rand.Rand) nft.Key { return nft.PortKey(vals(r)) },
	}
}

func protoField() fuzzField {
	protos := []uint8{6, 17, 132}
	return fuzzField{typ: nft.TypeInetProto,
		span:  func(r *rand.Rand) nft.Element { return nft.ProtoKey(protos[r.IntN(2)]).Elem() },
		probe: func(r *rand.Rand) nft.Key { return nft.ProtoKey(protos[r.IntN(3)]) },
	}
}

// ifaceField: workload interface names and wildcards.
func ifaceField() fuzzField {
	names := []string{"cali0000000000a", "cali0000000000b", "cali0000000000c", "tap1", "tap12"}
	return fuzzField{typ: nft.TypeIfname,
		span: func(r *rand.Rand) nft.Element {
			if r.IntN(5) == 0 {
				return nft.IfnamePrefixElem([]string{"cali", "tap", "tap1"}[r.IntN(3)])
			}
			return nft.IfnameElem(names[r.IntN(3)])
		},
		probe: func(r *rand.Rand) nft.Key { return nft.IfnameKey(append(names, "eth0", "tap2")[r.IntN(7)]) },
	}
}

func fuzzShapes() []fuzzShape {
	return []fuzzShape{
		{"ipv4 prefixes", nft.FamilyIP, []fuzzField{addrField(false)}},
		{"ipv6 prefixes", nft.FamilyIP6, []fuzzField{addrField(true)}},
		{"ipv4 . proto . port", nft.FamilyIP, []fuzzField{addrField(false), protoField(), portField()}},
		{"ipv6 . proto . port", nft.FamilyIP6, []fuzzField{addrField(true), protoField(), portField()}},
		{"ifname . ipv4", nft.FamilyIP, []fuzzField{ifaceField(), addrField(false)}},
		{"ifname . ipv6", nft.FamilyIP6, []fuzzField{ifaceField(), addrField(true)}},
	}
}

// elements makes n random elements, a third of them copies of earlier ones (duplicates).
func (s fuzzShape) elements(r *rand.Rand, n int) []nft.Element {
	var out []nft.Element
	for range n {
		if len(out) > 0 && r.IntN(3) == 0 {
			out = append(out, out[r.IntN(len(out))])
			continue
		}
		parts := make([]nft.Element, len(s.fields))
		for i, f := range s.fields {
			parts[i] = f.span(r)
		}
		out = append(out, concatOrSingle(parts))
	}
	return out
}

func concatOrSingle(parts []nft.Element) nft.Element {
	if len(parts) == 1 {
		return parts[0]
	}
	return nft.ConcatElem(parts...)
}

// probes are random keys plus the first and last keys of every element.
func (s fuzzShape) probes(r *rand.Rand, elems []nft.Element, n int) []nft.Key {
	var out []nft.Key
	for range n {
		parts := make([]nft.Key, len(s.fields))
		for i, f := range s.fields {
			parts[i] = f.probe(r)
		}
		if len(parts) == 1 {
			out = append(out, parts[0])
		} else {
			out = append(out, nft.ConcatKey(parts...))
		}
	}
	for _, e := range elems {
		lo, hi := e.Bounds()
		out = append(out, lo, hi)
	}
	return out
}

// TestKernelSetBuilderFuzz: random overlapping, nested, adjacent and duplicate elements of
// every set shape the renderers build from user data (IPv4 and IPv6, plain and concatenated
// intervals, named sets and a rule's list), normalized by the table, are taken by the kernel,
// read back as written, and the kernel's lookup of random and boundary keys agrees with the
// user's elements. Run longer with -setfuzz.rounds.
func TestKernelSetBuilderFuzz(t *testing.T) {
	ns := nstest.New(t)
	k := newBackend(t, ns)
	for _, s := range fuzzShapes() {
		t.Run(s.name, func(t *testing.T) {
			var in, out int
			for seed := range *setFuzzRounds {
				r := rand.New(rand.NewPCG(uint64(seed), 7))
				i, o := fuzzRound(t, k, s, r, seed)
				in, out = in+i, out+o
			}
			t.Logf("%d rounds: %d keys found in the kernel's set, %d not found, as the model says", *setFuzzRounds, in, out)
			if in == 0 || out == 0 {
				t.Error("the probes do not test both answers")
			}
		})
	}
}

// fuzzRound programs one random set (named, or a rule's list for interface names, which have
// no named interval sets) and compares the kernel's answers with the model.
func fuzzRound(t *testing.T, k *Backend, s fuzzShape, r *rand.Rand, seed int) (in, out int) {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	typ := s.typ()
	elems := s.elements(r, 1+r.IntN(40))
	tb := nft.NewTable(s.family, "fuzz")
	set := "s"
	if typ.Ordered() {
		must(t, tb.PutSet(&nft.Set{Name: "s", Type: typ, Interval: true, Elements: slices.Clone(elems)}))
	} else {
		fields := []nft.Field{nft.FieldIIFName, nft.FieldSAddr(nft.IPv4)}
		if s.family == nft.FamilyIP6 {
			fields[1] = nft.FieldSAddr(nft.IPv6)
		}
		must(t, tb.PutChain(&nft.Chain{Name: "c", Rules: []nft.Rule{nft.NewRule(nft.InList(fields, elems...), nft.Accept())}}))
	}
	applyOK(t, newApplier(t, k, tb), tb)
	read, err := k.Read(t.Context(), []nft.TableID{tb.ID()}, nft.ReadOptions{})
	if err != nil || len(read) != 1 {
		t.Fatalf("seed %d: reading back: %v", seed, err)
	}
	got := readElements(t, k, read[0], typ, &set)
	want, err := normalizedElements(tb, typ)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("seed %d: read back %d elements, wrote %d:\nread  %s\nwrote %s", seed, len(got), len(want), fmtElems(typ, got), fmtElems(typ, want))
	}
	for _, key := range s.probes(r, elems, 60) {
		model := slices.ContainsFunc(elems, func(e nft.Element) bool { return typ.Contains(e, key) })
		if kern := hasElement(t, k, tb.ID(), set, key); kern != model {
			t.Fatalf("seed %d: key %s: the kernel's set holds it %v, the user's elements %v\nelements %s\nwritten %s",
				seed, typ.FormatKey(key), kern, model, fmtElems(typ, elems), fmtElems(typ, want))
		}
		if model {
			in++
		} else {
			out++
		}
	}
	return in, out
}

// readElements finds the set as read back: the named set, or the rule's anonymous one (whose
// kernel name it stores in set).
func readElements(t *testing.T, k *Backend, tb *nft.Table, typ nft.DataType, set *string) []nft.Element {
	if s := tb.Set(*set); s != nil {
		return s.Elements
	}
	conn, err := k.dial()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	anon, err := (&reader{conn: conn}).sets(nft.NewTable(tb.Family, tb.Name))
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range anon {
		if s.Type == typ {
			*set = name
			return s.Elements
		}
	}
	t.Fatal("the rule's set was not read back")
	return nil
}

// normalizedElements is what the table holds for the set or list.
func normalizedElements(tb *nft.Table, typ nft.DataType) ([]nft.Element, error) {
	if s := tb.Set("s"); s != nil {
		return s.Elements, nil
	}
	lw, err := nft.LowerRule(tb.Family, tb.Chain("c").Rules[0])
	if err != nil || len(lw.Anon) != 1 || lw.Anon[0].Type != typ {
		return nil, fmt.Errorf("the rule's list: %v", err)
	}
	return lw.Anon[0].Elements, nil
}

func fmtElems(t nft.DataType, es []nft.Element) string {
	out := ""
	for i, e := range es {
		if i > 0 {
			out += ", "
		}
		out += t.FormatElement(e)
	}
	return out
}
