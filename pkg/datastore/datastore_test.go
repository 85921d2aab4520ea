package datastore_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

func newClient(t *testing.T, s *etcdtest.Server) *datastore.Client {
	t.Helper()
	c, err := datastore.New(s.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestFixtureRoundTrip loads every fixture into etcd, reads every value back through our decoder,
// and checks that re-encoding gives semantically the same JSON (apart from resourceVersion).
func TestFixtureRoundTrip(t *testing.T) {
	for _, name := range []string{"calicoctl-corpus.json", "cni-ipam-and-status.json", "startup-result.json"} {
		t.Run(name, func(t *testing.T) {
			s := etcdtest.Start(t)
			kvs := etcdtest.LoadFixture(t, s.Client(), name)
			c := newClient(t, s)
			for _, want := range kvs {
				kv, err := c.GetKV(ctx(t), want.Key)
				if err != nil {
					t.Fatal(err)
				}
				v, err := datastore.Decode(kv.Key, kv.Value, kv.ModRevision)
				if err != nil {
					t.Fatalf("%s: %v", kv.Key, err)
				}
				if v == nil {
					continue // felix status keys: plain JSON handled by felix's status package
				}
				got, _ := json.Marshal(v)
				if r, ok := v.(api.Resource); ok {
					if r.GetObjectMeta().ResourceVersion == "" {
						t.Errorf("%s: resourceVersion not filled in", kv.Key)
					}
					got, _ = datastore.EncodeResource(r)
				}
				assertJSONEqual(t, want.Key, want.Value, got)
			}
		})
	}
}

// TestPolicyMetadataAnnotation: a policy is stored with its name in the projectcalico.org/metadata
// annotation, as Project Calico's etcd backend writes it, and read without it (Project Calico's
// backend removes it, so no reader shows it); other annotations and other kinds are kept as given.
func TestPolicyMetadataAnnotation(t *testing.T) {
	s := etcdtest.Start(t)
	c := newClient(t, s)
	cases := []struct {
		obj      api.Resource
		key      string
		stored   map[string]string
		readBack map[string]string
	}{
		{&api.NetworkPolicy{ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "prod"}},
			"/calico/resources/v3/projectcalico.org/networkpolicies/prod/web",
			map[string]string{api.AnnotationMetadata: `{"name":"web"}`}, nil},
		{&api.GlobalNetworkPolicy{ObjectMeta: api.ObjectMeta{Name: "deny-all", Annotations: map[string]string{"owner": "net-team"}}},
			"/calico/resources/v3/projectcalico.org/globalnetworkpolicies/deny-all",
			map[string]string{"owner": "net-team", api.AnnotationMetadata: `{"name":"deny-all"}`}, map[string]string{"owner": "net-team"}},
		{&api.StagedGlobalNetworkPolicy{ObjectMeta: api.ObjectMeta{Name: "trial", Annotations: map[string]string{api.AnnotationMetadata: `{"name":"other"}`}}},
			"/calico/resources/v3/projectcalico.org/stagedglobalnetworkpolicies/trial",
			map[string]string{api.AnnotationMetadata: `{"name":"trial"}`}, nil},
		{&api.HostEndpoint{ObjectMeta: api.ObjectMeta{Name: "eth0", Annotations: map[string]string{api.AnnotationMetadata: "kept"}}, Spec: api.HostEndpointSpec{Node: "n", InterfaceName: "eth0"}},
			"/calico/resources/v3/projectcalico.org/hostendpoints/eth0",
			map[string]string{api.AnnotationMetadata: "kept"}, map[string]string{api.AnnotationMetadata: "kept"}},
	}
	for _, tc := range cases {
		k, _ := api.KindOf(tc.obj)
		m := tc.obj.GetObjectMeta()
		before := m.Annotations
		if _, err := c.Create(ctx(t), tc.obj); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m.Annotations, before) {
			t.Errorf("%s: Create changed the caller's annotations to %v", k.Kind, m.Annotations)
		}
		kv, err := c.GetKV(ctx(t), tc.key)
		if err != nil {
			t.Fatal(err)
		}
		var stored struct {
			Metadata struct{ Annotations map[string]string } `json:"metadata"`
		}
		if err := json.Unmarshal(kv.Value, &stored); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(stored.Metadata.Annotations, tc.stored) {
			t.Errorf("%s: stored annotations %v, want %v", k.Kind, stored.Metadata.Annotations, tc.stored)
		}
		got, err := c.Get(ctx(t), k, m.Namespace, m.Name)
		if err != nil {
			t.Fatal(err)
		}
		if a := got.GetObjectMeta().Annotations; !reflect.DeepEqual(a, tc.readBack) {
			t.Errorf("%s: read annotations %v, want %v", k.Kind, a, tc.readBack)
		}
	}
}

func assertJSONEqual(t *testing.T, what string, want, got []byte) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w, g) {
		t.Errorf("%s: round trip differs\nwant %s\ngot  %s", what, want, got)
	}
}

func TestCreateGetUpdateDelete(t *testing.T) {
	s := etcdtest.Start(t)
	c := newClient(t, s)
	pool := &api.IPPool{ObjectMeta: api.ObjectMeta{Name: "p1"}, Spec: api.IPPoolSpec{CIDR: "10.65.0.0/16", BlockSize: 26}}
	created, err := c.Create(ctx(t), pool)
	if err != nil {
		t.Fatal(err)
	}
	uid := created.GetObjectMeta().UID
	if uid == "" || created.GetObjectMeta().CreationTimestamp == "" {
		t.Fatalf("uid/creationTimestamp not set: %+v", created.GetObjectMeta())
	}
	if _, err := c.Create(ctx(t), &api.IPPool{ObjectMeta: api.ObjectMeta{Name: "p1"}}); !datastore.IsAlreadyExists(err) {
		t.Fatalf("second create: want AlreadyExists, got %v", err)
	}
	got, err := datastore.GetAs[*api.IPPool](ctx(t), c, "", "p1")
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.NATOutgoing = true
	got.UID = "" // a client that drops uid must not change it
	updated, err := c.Update(ctx(t), got)
	if err != nil {
		t.Fatal(err)
	}
	if updated.GetObjectMeta().UID != uid {
		t.Errorf("uid changed on update: %q -> %q", uid, updated.GetObjectMeta().UID)
	}
	if datastore.Revision(updated) <= datastore.Revision(created) {
		t.Errorf("resourceVersion did not advance")
	}
	if _, err := c.Delete(ctx(t), api.KindInfo{Kind: "IPPool", Plural: "ippools"}, "", "p1", datastore.Revision(created)); !datastore.IsConflict(err) {
		t.Fatalf("delete at stale revision: want Conflict, got %v", err)
	}
	k, _ := api.LookupKind("ippool")
	if _, err := c.Delete(ctx(t), k, "", "p1", datastore.Revision(updated)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx(t), k, "", "p1"); !datastore.IsNotFound(err) {
		t.Fatalf("get after delete: want NotFound, got %v", err)
	}
}

// TestConcurrentUpdates: many updates from the same revision, exactly one wins.
func TestConcurrentUpdates(t *testing.T) {
	s := etcdtest.Start(t)
	c := newClient(t, s)
	base, err := c.Create(ctx(t), &api.Tier{ObjectMeta: api.ObjectMeta{Name: "t1"}, Spec: api.TierSpec{Order: api.Float(1)}})
	if err != nil {
		t.Fatal(err)
	}
	rv := base.GetObjectMeta().ResourceVersion
	const n = 8
	var wg sync.WaitGroup
	results := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tier := &api.Tier{ObjectMeta: api.ObjectMeta{Name: "t1", ResourceVersion: rv}, Spec: api.TierSpec{Order: api.Float(float64(i))}}
			_, results[i] = c.Update(ctx(t), tier)
		}()
	}
	wg.Wait()
	wins, conflicts := 0, 0
	for _, err := range results {
		switch {
		case err == nil:
			wins++
		case datastore.IsConflict(err):
			conflicts++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if wins != 1 || conflicts != n-1 {
		t.Fatalf("want 1 win and %d conflicts, got %d wins and %d conflicts", n-1, wins, conflicts)
	}
}

// TestListSkipsGarbage: a garbage value is reported with its key and the listing goes on.
func TestListSkipsGarbage(t *testing.T) {
	s := etcdtest.Start(t)
	etcdtest.LoadFixture(t, s.Client(), "calicoctl-corpus.json")
	bad := datastore.ResourcePrefix + "ippools/broken"
	if _, err := s.Client().Put(ctx(t), bad, "{not json"); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	k, _ := api.LookupKind("IPPool")
	res, err := c.List(ctx(t), k, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 3 {
		t.Errorf("want the 3 fixture pools, got %d", len(res.Items))
	}
	if len(res.Invalid) != 1 || res.Invalid[0].Key != bad {
		t.Errorf("want the broken key reported, got %+v", res.Invalid)
	}
}

// TestListPagination lists more objects than one page holds, pinned to one revision.
func TestListPagination(t *testing.T) {
	s := etcdtest.Start(t)
	cli := s.Client()
	for i := range 1234 {
		wep := api.WorkloadEndpoint{ObjectMeta: api.ObjectMeta{Name: api.WorkloadEndpointName("h", "cni", strconv.Itoa(i), "eth0"), Namespace: "default"}}
		wep.Spec.Node = "h"
		b, _ := json.Marshal(wep)
		if _, err := cli.Put(ctx(t), datastore.ResourcePrefix+"workloadendpoints/default/"+wep.Name, string(b)); err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, s)
	weps, _, err := datastore.ListAs[*api.WorkloadEndpoint](ctx(t), c, "default")
	if err != nil {
		t.Fatal(err)
	}
	if len(weps) != 1234 {
		t.Fatalf("want 1234 endpoints, got %d", len(weps))
	}
}

func TestTLS(t *testing.T) {
	s := etcdtest.StartTLS(t)
	c := newClient(t, s)
	if err := c.Ping(ctx(t)); err != nil {
		t.Fatalf("TLS ping: %v", err)
	}
	cfg := s.Datastore()
	cfg.Etcd.CertFile, cfg.Etcd.KeyFile = "", ""
	noCert, err := datastore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer noCert.Close()
	short, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := noCert.Ping(short); err == nil {
		t.Fatal("a client without a certificate must be refused")
	}
}

// TestGetKVs: several keys in one request, a missing one nil, each with its own revision.
func TestGetKVs(t *testing.T) {
	s := etcdtest.Start(t)
	c := newClient(t, s)
	first, err := c.CreateKV(ctx(t), "/calico/test/a", []byte("A"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.CreateKV(ctx(t), "/calico/test/c", []byte("C"))
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := c.GetKVs(ctx(t), "/calico/test/a", "/calico/test/b", "/calico/test/c")
	if err != nil {
		t.Fatal(err)
	}
	if len(kvs) != 3 || kvs[1] != nil || kvs[0] == nil || kvs[2] == nil {
		t.Fatalf("GetKVs = %v, want a, nil, c", kvs)
	}
	if string(kvs[0].Value) != "A" || kvs[0].ModRevision != first || kvs[0].Key != "/calico/test/a" ||
		string(kvs[2].Value) != "C" || kvs[2].ModRevision != second {
		t.Errorf("GetKVs = %+v, %+v", *kvs[0], *kvs[2])
	}
}

// TestGetBatch: keys and prefixes in one request, each result in key order, a missing key empty.
func TestGetBatch(t *testing.T) {
	s := etcdtest.Start(t)
	c := newClient(t, s)
	for _, k := range []string{"/calico/t/p/b", "/calico/t/p/a", "/calico/t/pz", "/calico/t/k"} {
		if _, err := c.CreateKV(ctx(t), k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := c.GetBatch(ctx(t), datastore.BatchGet{Key: "/calico/t/p/", Prefix: true}, datastore.BatchGet{Key: "/calico/t/k"},
		datastore.BatchGet{Key: "/calico/t/missing"}, datastore.BatchGet{Key: "/calico/t/none/", Prefix: true})
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, kvs := range res {
		var keys []string
		for _, kv := range kvs {
			if string(kv.Value) != kv.Key || kv.ModRevision == 0 {
				t.Errorf("%s: value %q, revision %d", kv.Key, kv.Value, kv.ModRevision)
			}
			keys = append(keys, kv.Key)
		}
		got = append(got, keys)
	}
	want := [][]string{{"/calico/t/p/a", "/calico/t/p/b"}, {"/calico/t/k"}, nil, nil}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GetBatch = %v, want %v", got, want)
	}
}
