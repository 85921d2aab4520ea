package routes

import (
	"fmt"
	"testing"

	"github.com/calico-host/calico-host/internal/logtest"
)

// BenchmarkPartialApply measures an Apply of 10000 desired routes of which one changed (fake kernel).
func BenchmarkPartialApply(b *testing.B) {
	f := newFakeWithLinks("cali1", "cali2")
	r := New(f, Ownership{}, logtest.Logger(b))
	desired := manyRoutes(10000)
	if _, err := r.Apply(ctx, desired); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		desired[i%len(desired)].Dev = []string{"cali1", "cali2"}[i%2]
		if _, err := r.Apply(ctx, desired); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNetnsFullApply measures programming 1000 routes into a fresh namespace and removing them.
func BenchmarkNetnsFullApply(b *testing.B) {
	for _, n := range []int{1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ns := newTestNS(b)
			ns.veth(b, "cali1", "cali1p")
			r := New(NewNetlink(ns.h), Ownership{}, logtest.Logger(b))
			desired := make([]Route, n)
			for i := range desired {
				desired[i] = wl(fmt.Sprintf("10.65.%d.%d/32", i/256, i%256), "cali1")
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if st, err := r.Apply(ctx, desired); err != nil || st.Replaced != n {
					b.Fatal(st, err)
				}
				if st, err := r.Apply(ctx, nil); err != nil || st.Deleted != n {
					b.Fatal(st, err)
				}
			}
		})
	}
}
