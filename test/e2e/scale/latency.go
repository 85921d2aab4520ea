package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/felix/calc/calcbench"
	"github.com/calico-host/calico-host/test/e2e/topo"
)

// change is one datastore write and the token its kernel update must show.
type change struct {
	kind, key, token string
	value            []byte
}

// changes builds n alternating policy and endpoint changes: a new destination port in an
// active policy's ingress rule, and a new address for a remote workload.
func changes(ctx context.Context, ds *datastore.Client, shape calcbench.Shape, n int) ([]change, error) {
	pols, _, err := ds.ListKV(ctx, datastore.ResourcePrefix+"networkpolicies/", 0)
	if err != nil {
		return nil, err
	}
	var appPolicies []datastore.KV
	for _, kv := range pols {
		if strings.Contains(kv.Key, "/app-") {
			appPolicies = append(appPolicies, kv)
		}
	}
	if len(appPolicies) == 0 {
		return nil, errors.New("no app policies in the data set")
	}
	var out []change
	for i := range n {
		var c change
		if i%2 == 0 {
			c, err = policyChange(appPolicies[i/2%len(appPolicies)], 41000+i)
		} else {
			c, err = endpointChange(ctx, ds, shape, i)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func policyChange(kv datastore.KV, port int) (change, error) {
	r, err := datastore.DecodeResource(kv.Key, kv.Value, kv.ModRevision)
	if err != nil {
		return change{}, fmt.Errorf("%s: %w", kv.Key, err)
	}
	p, ok := r.(*api.NetworkPolicy)
	if !ok {
		return change{}, fmt.Errorf("%s is a %T", kv.Key, r)
	}
	if len(p.Spec.Ingress) == 0 {
		return change{}, fmt.Errorf("%s has no ingress rule", kv.Key)
	}
	ports := append([]api.Port{}, p.Spec.Ingress[0].Destination.Ports...)
	pp, _ := api.ParsePort(fmt.Sprint(port))
	p.Spec.Ingress[0].Destination.Ports = append(ports, pp)
	val, err := calcbench.Encode(p)
	return change{kind: "policy", key: kv.Key, token: fmt.Sprint(port), value: val}, err
}

func endpointChange(ctx context.Context, ds *datastore.Client, shape calcbench.Shape, i int) (change, error) {
	j := (i * 37) % shape.Remote
	key := shape.RemoteEndpoint(j, "web").ID.Key()
	kv, err := ds.GetKV(ctx, key)
	if err != nil {
		return change{}, fmt.Errorf("%s: %w", key, err)
	}
	r, err := datastore.DecodeResource(key, kv.Value, kv.ModRevision)
	if err != nil {
		return change{}, fmt.Errorf("%s: %w", key, err)
	}
	w, ok := r.(*api.WorkloadEndpoint)
	if !ok {
		return change{}, fmt.Errorf("%s is a %T", key, r)
	}
	ip := netip.AddrFrom4([4]byte{10, 66, byte(i / 250), byte(1 + i%250)})
	w.Spec.IPNetworks = []string{ip.String() + "/32"}
	val, err := calcbench.Encode(w)
	return change{kind: "endpoint", key: key, token: ip.String(), value: val}, err
}

// latencies applies each change and measures until the kernel shows it (giving up after
// timeout), waiting gap between the kernel update and the next change.
func latencies(ctx context.Context, ds *datastore.Client, m *topo.NftMonitor, cs []change, timeout, gap time.Duration) (map[string][]time.Duration, int, error) {
	out := map[string][]time.Duration{}
	missed := 0
	for _, c := range cs {
		if gap > 0 {
			time.Sleep(gap)
		}
		seen := m.Expect(c.token)
		start := time.Now()
		if _, err := ds.Etcd().Put(ctx, c.key, string(c.value)); err != nil {
			return nil, 0, err
		}
		select {
		case t := <-seen:
			d := t.Sub(start)
			out[c.kind], out["all"] = append(out[c.kind], d), append(out["all"], d)
		case <-time.After(timeout):
			missed++
			fmt.Fprintf(os.Stderr, "scale: %s change of %s never showed %s in the kernel\n", c.kind, c.key, c.token)
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	return out, missed, nil
}

// percentile returns the p-th percentile (0-100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration{}, ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}
