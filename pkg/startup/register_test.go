package startup

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/internal/buildinfo"
	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

var (
	guidRE = regexp.MustCompile(`^[0-9a-f]{32}$`)
	ulaRE  = regexp.MustCompile(`^fd[0-9a-f]{2}:[0-9a-f]{1,4}:[0-9a-f]{1,4}::/48$`)
)

// normalise removes what differs between any two runs (uids, timestamps, the cluster GUID, the
// random IPv6 pool) after checking its form.
func normalise(t *testing.T, key string, v map[string]any, ours bool) {
	t.Helper()
	meta := v["metadata"].(map[string]any)
	delete(meta, "uid")
	delete(meta, "creationTimestamp")
	spec, _ := v["spec"].(map[string]any)
	if g, ok := spec["clusterGUID"].(string); ok {
		if !guidRE.MatchString(g) {
			t.Errorf("%s: clusterGUID %q is not 32 hex digits", key, g)
		}
		spec["clusterGUID"] = "GUID"
	}
	if strings.HasSuffix(key, "/default-ipv6-ippool") {
		if !ulaRE.MatchString(spec["cidr"].(string)) {
			t.Errorf("%s: cidr %v is not a random ULA /48", key, spec["cidr"])
		}
		spec["cidr"] = "ULA"
	}
	if strings.HasSuffix(key, "/default-ipv4-ippool") {
		spec["cidr"] = "CIDR"
	}
	if ours && strings.Contains(key, "/nodes/") {
		// Our one addition: the version annotation (Project Calico's tools ignore annotations).
		ann, _ := meta["annotations"].(map[string]any)
		if ann[VersionAnnotation] != buildinfo.Version || len(ann) != 1 {
			t.Errorf("%s: annotations %v, want only %s=%s", key, ann, VersionAnnotation, buildinfo.Version)
		}
		delete(meta, "annotations")
	}
}

// TestRegisterMatchesFixture runs the startup sequence against an empty etcd with the fixture's
// settings and compares every object written with what Project Calico's calico-node wrote.
func TestRegisterMatchesFixture(t *testing.T) {
	h := newHarness(t, fixtureEnv(t), fixtureHost())
	if err := h.startup().Register(ctxT(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	fixture, err := etcdtest.ReadFixture("startup-result.json")
	if err != nil {
		t.Fatal(err)
	}
	ours := h.values(datastore.ResourcePrefix)
	want := map[string]map[string]any{}
	for _, kv := range fixture {
		var v map[string]any
		if err := json.Unmarshal(kv.Value, &v); err != nil {
			t.Fatal(err)
		}
		want[kv.Key] = v
	}
	if got, exp := slices.Sorted(maps.Keys(ours)), slices.Sorted(maps.Keys(want)); !reflect.DeepEqual(got, exp) {
		t.Fatalf("keys differ\n got %v\nwant %v", got, exp)
	}
	for key, w := range want {
		normalise(t, key, w, false)
		normalise(t, key, ours[key], true)
		if !reflect.DeepEqual(ours[key], w) {
			g, _ := json.Marshal(ours[key])
			e, _ := json.Marshal(w)
			t.Errorf("%s differs\n got %s\nwant %s", key, g, e)
		}
	}
	if pool := ours[datastore.ResourcePrefix+"ippools/default-ipv4-ippool"]; pool == nil {
		t.Fatal("no IPv4 pool")
	}
	p, _ := datastore.GetAs[*api.IPPool](ctxT(t, 5*time.Second), h.ds, "", DefaultIPv4PoolName)
	if p.Spec.CIDR != "10.65.0.0/16" {
		t.Errorf("IPv4 pool CIDR %s, want the configured 10.65.0.0/16", p.Spec.CIDR)
	}
	if name, _ := os.ReadFile(h.env["CALICO_NODENAME_FILE"]); string(name) != "host-z" {
		t.Errorf("nodename file holds %q", name)
	}
}

// TestSecondRunIsNoop: running the whole sequence (with the tunnel address) again writes nothing.
func TestSecondRunIsNoop(t *testing.T) {
	h := newHarness(t, fixtureEnv(t), fixtureHost())
	if err := h.startup().RunOnce(ctxT(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	before, rev := h.revisions()
	if err := h.startup().RunOnce(ctxT(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	after, rev2 := h.revisions()
	if rev2 != rev || !reflect.DeepEqual(before, after) {
		t.Errorf("second run wrote to etcd: revision %d -> %d", rev, rev2)
		for k, r := range after {
			if before[k] != r {
				t.Errorf("  %s: mod revision %d -> %d", k, before[k], r)
			}
		}
	}
}

// TestCalicoStateIsKept starts on the datastore Project Calico's calico-node left: the only write
// is our version annotation on the Node; ClusterInformation is left alone.
func TestCalicoStateIsKept(t *testing.T) {
	env := fixtureEnv(t)
	delete(env, "CALICO_IPV4POOL_CIDR")
	h := newHarness(t, env, fixtureHost())
	etcdtest.LoadFixture(t, h.raw, "startup-result.json")
	before, _ := h.revisions()
	if err := h.startup().Register(ctxT(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	after, _ := h.revisions()
	for k, r := range after {
		changed := before[k] != r
		if changed != strings.HasSuffix(k, "/nodes/host-z") {
			t.Errorf("%s: changed=%v", k, changed)
		}
	}
	if n := h.node("host-z"); n.Annotations[VersionAnnotation] != buildinfo.Version {
		t.Errorf("node annotations %v", n.Annotations)
	}
}

// TestCalicoVersionNeverOurs: Project Calico's calicoctl refuses to work when ClusterInformation
// calicoVersion differs from its own version, so startup never writes ours there. A value a
// calico-node host wrote is kept, an empty one stays empty, and only calico_version /
// CALICO_VERSION set explicitly is written.
func TestCalicoVersionNeverOurs(t *testing.T) {
	for _, tc := range []struct {
		name, stored, configured, want string
	}{
		{"fresh datastore", "-", "", ""},
		{"fresh datastore, configured", "-", "v3.30.2", "v3.30.2"},
		{"written by calico-node", "v3.29.1", "", "v3.29.1"},
		{"empty", "", "", ""},
		{"configured over calico-node's", "v3.29.1", "v3.30.2", "v3.30.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := fixtureEnv(t)
			if tc.configured != "" {
				env["CALICO_VERSION"] = tc.configured
			}
			h := newHarness(t, env, fixtureHost())
			ctx := ctxT(t, 30*time.Second)
			if tc.stored != "-" {
				ci := &api.ClusterInformation{ObjectMeta: api.ObjectMeta{Name: "default"}, Spec: api.ClusterInformationSpec{
					ClusterGUID: "00112233445566778899aabbccddeeff", DatastoreReady: api.Bool(true), CalicoVersion: tc.stored}}
				if _, err := h.ds.Create(ctx, ci); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.startup().Register(ctx); err != nil {
				t.Fatal(err)
			}
			ci, err := datastore.GetAs[*api.ClusterInformation](ctx, h.ds, "", "default")
			if err != nil {
				t.Fatal(err)
			}
			if ci.Spec.CalicoVersion != tc.want {
				t.Errorf("calicoVersion %q, want %q", ci.Spec.CalicoVersion, tc.want)
			}
			if n := h.node("host-z"); n.Annotations[VersionAnnotation] != buildinfo.Version {
				t.Errorf("node annotations %v", n.Annotations)
			}
		})
	}
}

// TestUserObjectsAreNeverOverwritten: existing pools and configuration stay exactly as the user
// wrote them; the Node keeps the user's labels.
func TestUserObjectsAreNeverOverwritten(t *testing.T) {
	h := newHarness(t, fixtureEnv(t), fixtureHost())
	ctx := ctxT(t, 30*time.Second)
	user := []api.Resource{
		&api.IPPool{ObjectMeta: api.ObjectMeta{Name: "user-v4"}, Spec: api.IPPoolSpec{CIDR: "10.65.128.0/17", BlockSize: 28, VXLANMode: "Never"}},
		&api.IPPool{ObjectMeta: api.ObjectMeta{Name: "user-v6"}, Spec: api.IPPoolSpec{CIDR: "fd5c:9::/48", BlockSize: 122}},
		&api.FelixConfiguration{ObjectMeta: api.ObjectMeta{Name: "default"}, Spec: api.FelixConfigurationSpec{LogSeverityScreen: "Debug", ReportingInterval: api.Dur(30 * time.Second)}},
		&api.FelixConfiguration{ObjectMeta: api.ObjectMeta{Name: "node.host-z"}, Spec: api.FelixConfigurationSpec{DefaultEndpointToHostAction: "Accept"}},
		&api.BGPConfiguration{ObjectMeta: api.ObjectMeta{Name: "default"}, Spec: api.BGPConfigurationSpec{NodeToNodeMeshEnabled: api.Bool(false)}},
		&api.IPAMConfiguration{ObjectMeta: api.ObjectMeta{Name: "default"}, Spec: api.IPAMConfigurationSpec{StrictAffinity: true}},
		&api.ClusterInformation{ObjectMeta: api.ObjectMeta{Name: "default"}, Spec: api.ClusterInformationSpec{
			ClusterGUID: "00112233445566778899aabbccddeeff", CalicoVersion: "v3.29.1", DatastoreReady: api.Bool(false), ClusterType: "openstack"}},
		&api.Tier{ObjectMeta: api.ObjectMeta{Name: "default"}, Spec: api.TierSpec{Order: api.Float(5), DefaultAction: "Deny"}},
		&api.Node{ObjectMeta: api.ObjectMeta{Name: "host-z", Labels: map[string]string{"rack": "r1"}}},
	}
	for _, r := range user {
		if _, err := h.ds.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := h.revisions()
	if err := h.startup().Register(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := h.revisions()
	for k, r := range before {
		if after[k] != r && !strings.HasSuffix(k, "/nodes/host-z") {
			t.Errorf("%s was rewritten", k)
		}
	}
	for k := range after {
		if strings.Contains(k, "default-ipv") {
			t.Errorf("%s created although pools of both families exist", k)
		}
	}
	n := h.node("host-z")
	if n.Labels["rack"] != "r1" || n.Spec.BGP == nil || n.Spec.BGP.IPv4Address != "198.18.255.2/30" {
		t.Errorf("node: labels %v, bgp %+v", n.Labels, n.Spec.BGP)
	}
}

// TestUnreadablePoolBlocksDefaultPools: a stored pool that cannot be read (undecodable, or a
// CIDR that does not parse), as etcdctl or another tool may leave one, is a pool of an unknown
// family: startup creates no default pool beside it (which would hand out addresses nobody
// chose), and leaves it as it is.
func TestUnreadablePoolBlocksDefaultPools(t *testing.T) {
	for name, value := range map[string]string{
		"undecodable": `{"kind":"IPPool","apiVersion":"projectcalico.org/v3","metadata":{"name":"undecodable"},"spec":{"cidr":5}}`,
		"bad-cidr":    `{"kind":"IPPool","apiVersion":"projectcalico.org/v3","metadata":{"name":"bad-cidr"},"spec":{"cidr":"10.65.0.0/99"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, fixtureEnv(t), fixtureHost())
			ctx := ctxT(t, 30*time.Second)
			key := datastore.ResourcePrefix + "ippools/" + name
			if _, err := h.raw.Put(ctx, key, value); err != nil {
				t.Fatal(err)
			}
			before, _ := h.revisions()
			if err := h.startup().Register(ctx); err != nil {
				t.Fatal(err)
			}
			after, _ := h.revisions()
			for k := range after {
				if strings.Contains(k, "default-ipv") {
					t.Errorf("%s created beside a pool that cannot be read", k)
				}
			}
			if after[key] != before[key] {
				t.Errorf("%s was rewritten", key)
			}
		})
	}
}

// TestOpenStackKeepsAgentStatusOn: on an OpenStack cluster (networking-calico adds "openstack"
// to clusterType) startup must not switch felix's agent status off (reportingInterval 0), or
// Neutron can no longer bind ports; elsewhere it writes 0 as Project Calico does.
func TestOpenStackKeepsAgentStatusOn(t *testing.T) {
	for _, tc := range []struct {
		clusterType string
		want        *api.Duration
	}{{"", api.Dur(0)}, {"openstack", nil}} {
		h := newHarness(t, fixtureEnv(t), fixtureHost())
		ctx := ctxT(t, 30*time.Second)
		if tc.clusterType != "" {
			ci := &api.ClusterInformation{ObjectMeta: api.ObjectMeta{Name: "default"}, Spec: api.ClusterInformationSpec{
				ClusterGUID: "00112233445566778899aabbccddeeff", DatastoreReady: api.Bool(true), ClusterType: tc.clusterType}}
			if _, err := h.ds.Create(ctx, ci); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.startup().Register(ctx); err != nil {
			t.Fatal(err)
		}
		fc, err := datastore.GetAs[*api.FelixConfiguration](ctx, h.ds, "", "default")
		if err != nil {
			t.Fatal(err)
		}
		got := fc.Spec.ReportingInterval
		if (got == nil) != (tc.want == nil) || (got != nil && got.Duration != tc.want.Duration) {
			t.Errorf("clusterType %q: reportingInterval %v, want %v", tc.clusterType, got, tc.want)
		}
	}
}

// TestNodeUpdateKeepsUnknownFields: a Node written by a newer Project Calico, with fields our
// types do not know, keeps them when startup updates it (address and version annotation).
func TestNodeUpdateKeepsUnknownFields(t *testing.T) {
	h := newHarness(t, fixtureEnv(t), fixtureHost())
	key := datastore.ResourcePrefix + "nodes/host-z"
	if _, err := h.raw.Put(ctxT(t, 5*time.Second), key, `{"kind":"Node","apiVersion":"projectcalico.org/v3",`+
		`"metadata":{"name":"host-z","uid":"7efff00e-23cf-4c27-a1ac-9a803e7e0913","creationTimestamp":"2026-11-29T13:17:37Z","futureMeta":1},`+
		`"spec":{"bgp":{"ipv4Address":"198.18.0.9/24","futureBGP":"x"},"futureSpec":[1,2]},"status":{"futureStatus":true}}`); err != nil {
		t.Fatal(err)
	}
	if err := h.startup().Register(ctxT(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	got := h.values(key)[key]
	md, spec := got["metadata"].(map[string]any), got["spec"].(map[string]any)
	bgp := spec["bgp"].(map[string]any)
	if md["futureMeta"] != float64(1) || bgp["futureBGP"] != "x" || spec["futureSpec"] == nil || got["status"].(map[string]any)["futureStatus"] != true {
		t.Errorf("unknown fields lost: %v", got)
	}
	if bgp["ipv4Address"] != "198.18.255.2/30" {
		t.Errorf("startup did not update the node: %v", bgp)
	}
}
