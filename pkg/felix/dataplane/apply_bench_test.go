package dataplane

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/dataplane/ifaces"
	"github.com/calico-host/calico-host/pkg/nft/fake"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// BenchmarkApplyChange: the dataplane's whole apply (model, ruleset build, nft plan and
// encoding on the fake kernel, workload interfaces, routes, statuses) for one datastore change
// on the loaded calc bench shape, every local interface up: a policy's ports, and a remote
// endpoint's address (an IP set member), each applied and undone. The kernel's own work is not
// in it (see BenchmarkPartialChange).
func BenchmarkApplyChange(b *testing.B) {
	g := calc.New("host1", zerolog.Nop())
	g.OnMessage(syncer.Message{Snapshot: true, Status: syncer.InSync, Updates: benchSnapshot(calcBenchShape)})
	dp := newBenchDataplane(b, "", fake.New())
	for i := range calcBenchShape.local {
		dp.model.applyIface(ifaces.Update{Name: benchIface(i), State: &ifaces.State{Name: benchIface(i), Up: true}})
	}
	dp.model.applyIface(ifaces.Update{InSync: true})
	dp.applyAll(b, g.Flush())
	pol := benchPolicy("pol-0007", 7)
	polKey := resPrefix + "globalnetworkpolicies/pol-0007"
	i := calcBenchShape.local + 7
	ctr := fmt.Sprintf("c%05d", i)
	name := api.WorkloadEndpointName(fmt.Sprintf("host%d", 2+i%100), "cni", ctr, "eth0")
	wepKey := resPrefix + "workloadendpoints/ns" + fmt.Sprint(i%10) + "/" + name
	wep := benchWEP(i, fmt.Sprintf("host%d", 2+i%100), fmt.Sprintf("ns%d", i%10), ctr, name)
	moved := *wep
	moved.Spec.IPNetworks = []string{"10.66.0.1/32"}
	for _, c := range []struct {
		name     string
		do, undo syncer.Update
	}{
		{"policy-rule", syncer.Update{ID: datastore.IDOf(polKey), Value: withPort(pol, 8443)}, syncer.Update{ID: datastore.IDOf(polKey), Value: pol}},
		{"remote-endpoint-ip", syncer.Update{ID: datastore.IDOf(wepKey), Value: &moved}, syncer.Update{ID: datastore.IDOf(wepKey), Value: wep}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var total time.Duration
			n := 0
			for b.Loop() {
				for _, u := range []syncer.Update{c.do, c.undo} {
					ups := flushWith(g, u)
					start := time.Now()
					dp.applyAll(b, ups)
					total += time.Since(start)
					n++
				}
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(n), "apply-ms")
		})
	}
}

// applyAll records the updates and runs the dataplane's apply.
func (d *Dataplane) applyAll(b *testing.B, ups []calc.Update) {
	b.Helper()
	for _, u := range ups {
		d.model.apply(u)
	}
	if _, err := d.apply(context.Background()); err != nil {
		b.Fatal(err)
	}
}
