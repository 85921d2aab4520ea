package config

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/compat"
	"github.com/calico-host/calico-host/pkg/compat/snapshot"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

// calicoParam is one of Project Calico's felix parameters, from compat's snapshot of its source.
type calicoParam struct {
	name, typ, def string
	field          string // FelixConfiguration JSON field, "" when it has none
}

// calicoParams are Project Calico's felix parameters, from compat's snapshot.
func calicoParams(t *testing.T) []*calicoParam {
	all, _ := snapshot.Read(t)
	var out []*calicoParam
	byName := map[string]*calicoParam{}
	for _, s := range all {
		switch s.Kind {
		case "Felix":
			p := &calicoParam{name: s.Name, typ: s.Type, def: s.Default}
			out, byName[strings.ToLower(p.name)] = append(out, p), p
		case "FelixConfiguration":
			if p := byName[strings.ToLower(s.Param)]; p != nil {
				p.field = strings.TrimPrefix(s.Name, "spec.")
			}
		}
	}
	if len(out) < 200 {
		t.Fatalf("only %d felix parameters in the snapshot", len(out))
	}
	return out
}

// TestEveryCalicoParameterIsAppliedOrReported loads Project Calico's calicoctl corpus into etcd
// with every FelixConfiguration parameter of Project Calico set to a value other than its
// default in FelixConfiguration default (and every other parameter in the environment), reads
// it back as felix does and resolves the configuration: each parameter is applied (its typed
// Config field differs from the default and comes from that source) or reported exactly once
// as not implemented. DatastoreType's only other value (kubernetes) is refused instead.
func TestEveryCalicoParameterIsAppliedOrReported(t *testing.T) {
	params := calicoParams(t)
	srv := etcdtest.Start(t)
	cli := srv.Client()
	etcdtest.LoadFixture(t, cli, "calicoctl-corpus.json")
	ds := datastore.NewFromEtcd(cli)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	fc, err := datastore.GetAs[*api.FelixConfiguration](ctx, ds, "", "default")
	if err != nil {
		t.Fatal(err)
	}
	node := &api.FelixConfiguration{TypeMeta: api.TypeMeta{Kind: "FelixConfiguration", APIVersion: api.APIVersion},
		ObjectMeta: api.ObjectMeta{Name: "node.host-x"}}
	environ := setEveryParam(t, fc, node, params)
	for _, obj := range []*api.FelixConfiguration{fc, node} {
		if err := datastore.Validate(obj); err != nil {
			t.Fatalf("the FelixConfiguration with every parameter set is invalid: %v", err)
		}
	}
	if _, err := ds.Update(ctx, fc); err != nil {
		t.Fatal(err)
	}
	if _, err := ds.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	specs := map[string]*api.FelixConfigurationSpec{}
	for _, name := range []string{"default", "node.host-x"} {
		stored, err := datastore.GetAs[*api.FelixConfiguration](ctx, ds, "", name)
		if err != nil {
			t.Fatal(err)
		}
		specs[name] = &stored.Spec
	}
	local := &Local{Env: EnvLayer(environ), File: Layer{Source: SourceFile, Values: map[string]string{}}, OSHostname: "host-x"}
	c, problems := local.Resolve(&Datastore{Global: specs["default"], Node: specs["node.host-x"]})
	defaults, _ := Resolve()
	reported := map[string]int{}
	for _, f := range c.NotImplemented {
		reported[f.Setting.Name]++
	}
	applied, notImpl := 0, 0
	for _, p := range params {
		switch n := checkParam(t, p, c, defaults, reported, problems); n {
		case "applied":
			applied++
		case "reported":
			notImpl++
		}
	}
	t.Logf("%d parameters of Project Calico: %d applied, %d reported as not implemented", len(params), applied, notImpl)
}

// checkParam checks one parameter's outcome and says which it was.
func checkParam(t *testing.T, p *calicoParam, c, defaults *Config, reported map[string]int, problems []Problem) string {
	t.Helper()
	want := SourceDatastore
	if p.field == "" {
		want = SourceEnv
	}
	if q, ok := Lookup(p.name); ok {
		if p.name == "DatastoreType" {
			if len(problems) != 1 || problems[0].Param != "DatastoreType" {
				t.Errorf("DatastoreType kubernetes: problems %v, want exactly its refusal", problems)
			}
			return "refused"
		}
		if c.Sources[q.Name] != want || reflect.DeepEqual(c.Value(q.Name), defaults.Value(q.Name)) {
			t.Errorf("%s: not applied (source %s, value %v, default %v)", p.name, c.Sources[q.Name], c.Value(q.Name), defaults.Value(q.Name))
		}
		return "applied"
	}
	s, ok := compat.FelixParam(p.name)
	if !ok {
		t.Errorf("%s: neither a parameter nor on compat's list", p.name)
		return ""
	}
	if s.Implemented(envText(nonDefault(p))) { // UsageReportingEnabled false: no reports, as here
		if reported[p.name] != 0 {
			t.Errorf("%s: a value calico-host implements was reported", p.name)
		}
		return "applied"
	}
	if reported[p.name] != 1 {
		t.Errorf("%s: reported %d times, want once", p.name, reported[p.name])
	}
	return "reported"
}

// setEveryParam sets every parameter with a FelixConfiguration field in fc (over the corpus's
// values) and returns the environment that sets the others.
func setEveryParam(t *testing.T, fc, node *api.FelixConfiguration, params []*calicoParam) []string {
	global, nodeSpec := map[string]any{}, map[string]any{}
	var environ []string
	for _, p := range params {
		v := nonDefault(p)
		switch {
		case p.field == "":
			environ = append(environ, "FELIX_"+strings.ToUpper(p.name)+"="+envText(v))
		case onNode[p.name]:
			nodeSpec[p.field] = v
		default:
			global[p.field] = v
		}
	}
	for _, set := range []struct {
		values map[string]any
		spec   *api.FelixConfigurationSpec
	}{{global, &fc.Spec}, {nodeSpec, &node.Spec}} {
		b, err := json.Marshal(set.values)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, set.spec); err != nil {
			t.Fatalf("setting every field: %v", err)
		}
	}
	return environ
}

func envText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// nonDefault is a valid value other than Project Calico's default, in the JSON form of its
// FelixConfiguration field, from felix's type of the parameter.
func nonDefault(p *calicoParam) any {
	if v, ok := specialValues[p.name]; ok {
		return v
	}
	typ, args, _ := strings.Cut(strings.TrimSuffix(p.typ, ")"), "(")
	switch typ {
	case "bool", "*bool":
		return p.def != "true"
	case "int", "dscp":
		n, _ := strconv.Atoi(p.def)
		return n + 1
	case "seconds", "millis":
		unit := time.Second
		if typ == "millis" {
			unit = time.Millisecond
		}
		f, _ := strconv.ParseFloat(p.def, 64)
		return (time.Duration(f*float64(unit)) + unit).String()
	case "oneof":
		for _, o := range strings.Split(args, ",") {
			if !strings.EqualFold(o, p.def) {
				return o
			}
		}
	}
	if v, ok := typeValues[typ]; ok {
		return v
	}
	return p.def + "x9"
}

// typeValues are valid non-default values by felix type.
var typeValues = map[string]any{
	"mark-bitmask": 0xff000000, "port-list": []map[string]any{{"protocol": "TCP", "port": 23}},
	"portrange": "1000:2000", "portrange-list": []string{"1000:2000"},
	"route-table-range": map[string]int{"min": 1, "max": 99}, "route-table-ranges": []map[string]int{{"min": 1, "max": 99}},
	"keydurationlist": []map[string]string{{"name": "InternalDataplaneMainLoop", "timeout": "40s"}},
	"cidr-list":       []string{"10.65.9.0/24"}, "iface-filter-slice": []string{"eth9+"},
	"ipv4": "198.18.0.9", "ipv6": "fd5c::9", "hostname": "198.18.0.5", "host-address": "127.0.0.2",
	"region": "region-one", "iface-list": "tap", "iface-list-regexp": "eth9", "regexp": "^eth9$",
	"iface-param": "wg9.cali", "file": "/tmp/calico-host-x", "log-rate": "10/second", "authority": "198.18.0.1:2379",
	"endpoint-list": "http://198.18.0.1:2379",
}

// specialValues are parameters whose type alone does not give a valid value.
var specialValues = map[string]any{
	"FelixHostname": "host-x", "DatastoreType": "kubernetes", "NFTablesMode": "Disabled", "LogPrefix": "calico-drop",
	"BPFConntrackTimeouts": map[string]string{"tcpSynSent": "21s"}, "BPFLogFilters": map[string]string{"all": "tcp"},
	"FeatureGates": "BPFConnectTimeLoadBalancingWorkaround=enabled", "FeatureDetectOverride": "ChecksumOffloadBroken=true",
	"IptablesMarkMask": 0xff000000, "BPFCTLBLogFilter": "all", "DebugPort": 6061,
	"ClusterType": "k8s,bgp", "CalicoVersion": "v3.99.0", "Variant": "Enterprise", "FlowLogsGoldmaneServer": "goldmane.calico-system:7443",
	// FelixConfiguration's spelling of these enums differs from felix's.
	"DefaultEndpointToHostAction": "Return", "LogSeverityScreen": "Debug", "LogSeverityFile": "Debug",
	"LogSeveritySys": "Debug", "BPFConntrackLogLevel": "Debug",
}

// onNode are parameters that cannot be set together with others in one FelixConfiguration
// (routeTableRange with routeTableRanges): they go to FelixConfiguration node.host-x.
var onNode = map[string]bool{"RouteTableRange": true}

// TestNonDefaultValuesDiffer guards the generator above: every value it makes differs from the
// parameter's default.
func TestNonDefaultValuesDiffer(t *testing.T) {
	for _, p := range calicoParams(t) {
		if got := fmt.Sprint(nonDefault(p)); got == p.def {
			t.Errorf("%s: %s is its default", p.name, got)
		}
	}
}
