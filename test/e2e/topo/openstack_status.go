package topo

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// What networking-calico reads back from felix (openstack-contract.md §2), and the other keys
// its elected server writes beside felix's.

// FelixHostPrefix is /calico/felix/v2/<rs>/host/ for a region ("" = none).
func FelixHostPrefix(region string) string {
	return "/calico/felix/v2/" + RegionString(region) + "/host/"
}

// PortStatusKey is where felix reports the VM port's status:
// /calico/felix/v2/<rs>/host/<host>/workload/openstack/<ns>%2f<device>/endpoint/<port>.
func (vm *VM) PortStatusKey() string {
	return fmt.Sprintf("%s%s/workload/openstack/%s%%2f%s/endpoint/%s",
		FelixHostPrefix(vm.Host.Region), vm.Host.Name, vm.Namespace, vm.DeviceID, vm.PortID)
}

// AgentStatusKey is where felix reports its liveness for Neutron.
func (h *Host) AgentStatusKey() string { return FelixHostPrefix(h.Region) + h.Name + "/status" }

// AgentStatus is the value of the agent status key.
type AgentStatus struct {
	Time        string   `json:"time"`
	Uptime      *float64 `json:"uptime"`
	FirstUpdate *bool    `json:"first_update"`
}

// Check validates the value as status.py parses it: an RFC 3339 time and the two other fields.
func (st AgentStatus) Check() error {
	if _, err := time.Parse(time.RFC3339, st.Time); err != nil {
		return fmt.Errorf("agent status time %q: %w", st.Time, err)
	}
	if st.Uptime == nil || st.FirstUpdate == nil {
		return fmt.Errorf("agent status without uptime or first_update: %+v", st)
	}
	return nil
}

// GetJSON reads a key and decodes it; found is false when it does not exist.
func (f *Fabric) GetJSON(ctx context.Context, key string, into any) (found bool, err error) {
	ds, err := f.Datastore()
	if err != nil {
		return false, err
	}
	resp, err := ds.Etcd().Get(ctx, key)
	if err != nil || len(resp.Kvs) == 0 {
		return false, err
	}
	return true, json.Unmarshal(resp.Kvs[0].Value, into)
}

// Keys lists the keys under a prefix.
func (f *Fabric) Keys(ctx context.Context, prefix string) ([]string, error) {
	ds, err := f.Datastore()
	if err != nil {
		return nil, err
	}
	resp, err := ds.Etcd().Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, kv := range resp.Kvs {
		out = append(out, string(kv.Key))
	}
	return out, nil
}

// KeyEvent is one change seen by a KeyRecorder.
type KeyEvent struct {
	Key, Value string
	Delete     bool
	ModRev     int64
	Lease      int64
	At         time.Time
}

// KeyRecorder records every change under a prefix, from its creation on.
type KeyRecorder struct {
	events chan KeyEvent
	cancel context.CancelFunc
	log    []KeyEvent
}

// RecordKeys watches a prefix until Stop (or the fabric closes).
func (f *Fabric) RecordKeys(ctx context.Context, prefix string) (*KeyRecorder, error) {
	ds, err := f.Datastore()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &KeyRecorder{events: make(chan KeyEvent, 10000), cancel: cancel}
	wch := ds.Etcd().Watch(clientv3.WithRequireLeader(ctx), prefix, clientv3.WithPrefix())
	go func() {
		defer close(r.events)
		for resp := range wch {
			for _, ev := range resp.Events {
				r.events <- KeyEvent{Key: string(ev.Kv.Key), Value: string(ev.Kv.Value), Delete: ev.Type == clientv3.EventTypeDelete,
					ModRev: ev.Kv.ModRevision, Lease: ev.Kv.Lease, At: time.Now()}
			}
		}
	}()
	return r, nil
}

// Events returns everything recorded so far.
func (r *KeyRecorder) Events() []KeyEvent {
	for {
		select {
		case ev, ok := <-r.events:
			if !ok {
				return r.log
			}
			r.log = append(r.log, ev)
		default:
			return r.log
		}
	}
}

// Stop ends the watch.
func (r *KeyRecorder) Stop() { r.cancel() }

// RoundTripCheck writes /calico/felix/v2/<rs>/host/round-trip-check every period, as the
// master neutron-server's status watchers do (etcdutils.py), until ctx ends.
func (f *Fabric) RoundTripCheck(ctx context.Context, region string, period time.Duration) error {
	ds, err := f.Datastore()
	if err != nil {
		return err
	}
	key := FelixHostPrefix(region) + "round-trip-check"
	put := func() error {
		_, err := ds.Etcd().Put(ctx, key, strconv.FormatFloat(float64(time.Now().UnixNano())/1e9, 'f', 6, 64))
		return err
	}
	if err := put(); err != nil {
		return fmt.Errorf("writing %s: %w", key, err)
	}
	go func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				put()
			}
		}
	}()
	return nil
}

// NeutronCompaction does what the elected neutron-server does every compaction period
// (mech_calico.py:1408-1640): a leased /calico/compaction/v1/trigger, the compaction, and
// /calico/compaction/v1/last. It keeps no history (the driver keeps >= 1000 revisions; a test
// has fewer). It returns the revision compacted at.
func (f *Fabric) NeutronCompaction(ctx context.Context, period time.Duration) (int64, error) {
	ds, err := f.Datastore()
	if err != nil {
		return 0, err
	}
	cli := ds.Etcd()
	lease, err := cli.Grant(ctx, int64(period/time.Second))
	if err != nil {
		return 0, err
	}
	cur, err := cli.Get(ctx, "/calico/compaction/v1/last")
	if err != nil {
		return 0, err
	}
	resp, err := cli.Put(ctx, "/calico/compaction/v1/trigger", strconv.FormatInt(cur.Header.Revision, 10), clientv3.WithLease(lease.ID))
	if err != nil {
		return 0, err
	}
	rev := resp.Header.Revision
	if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, fmt.Errorf("compacting at %d: %w", rev, err)
	}
	_, err = cli.Put(ctx, "/calico/compaction/v1/last", strconv.FormatInt(rev, 10))
	return rev, err
}
