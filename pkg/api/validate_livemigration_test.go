package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// What networking-calico writes for a port migrating from host-a to host-b (endpoints.py
// live_migration_spec), and variants that cannot be correlated unambiguously.
func TestLiveMigrationValidation(t *testing.T) {
	const ident = `"orchestratorID":"openstack","workloadID":"openstack/inst-1","endpointID":"port-1"`
	cases := []struct{ name, spec, want string }{
		{"openstack", `{"source":{"workloadEndpoint":{"hostname":"host-a",` + ident + `}},"target":{"workloadEndpoint":{"hostname":"host-b",` + ident + `}}}`, ""},
		{"kubevirt", `{"source":{"workload":{"orchestratorID":"k8s","workloadID":"ns/virt-launcher-a"}},"target":{"selector":"kubevirt.io/vmi == 'a'"}}`, ""},
		{"empty", `{}`, ""},
		{"two sources", `{"source":{"workload":{"hostname":"h","orchestratorID":"o","workloadID":"w"},"workloadEndpoint":{"hostname":"host-a",` + ident + `}}}`,
			"spec.source: only one of workload and workloadEndpoint may be set"},
		{"two targets", `{"target":{"selector":"all()","workloadEndpoint":{"hostname":"host-b",` + ident + `}}}`,
			"spec.target: only one of selector and workloadEndpoint may be set"},
		{"no endpoint id", `{"target":{"workloadEndpoint":{"hostname":"host-b","orchestratorID":"openstack","workloadID":"openstack/inst-1"}}}`,
			"spec.target.workloadEndpoint.endpointID: a value is required"},
		{"no hostname", `{"source":{"workloadEndpoint":{` + ident + `}}}`,
			"spec.source.workloadEndpoint.hostname: a value is required"},
		{"bad selector", `{"target":{"selector":"bad("}}`, "spec.target.selector: invalid selector"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lm := &LiveMigration{ObjectMeta: ObjectMeta{Name: "m", Namespace: "openstack"}}
			if err := json.Unmarshal([]byte(c.spec), &lm.Spec); err != nil {
				t.Fatal(err)
			}
			err := testValidator.Validate(lm)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}
