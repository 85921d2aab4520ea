package calicoctl

import (
	"testing"
)

const futurePolicyKey = "/calico/resources/v3/projectcalico.org/globalnetworkpolicies/future"

// futurePolicy is a GlobalNetworkPolicy as a newer Project Calico might store it: fields our types
// do not know at the top, in metadata, in spec, in the first rule and in that rule's source.
const futurePolicy = `{"kind":"GlobalNetworkPolicy","apiVersion":"projectcalico.org/v3",
"metadata":{"name":"future","uid":"0b2e1c3a-8d7f-4a51-9c3e-2f1d0a9b8c7d","creationTimestamp":"2026-01-02T03:04:05Z",
  "labels":{"projectcalico.org/tier":"default"},"futureMeta":"m"},
"spec":{"tier":"default","order":10,"selector":"all()","types":["Ingress"],"futureSpec":{"a":[1,2]},
  "ingress":[{"action":"Allow","futureRule":true,"source":{"nets":["10.65.0.0/16"],"futureEntity":"e"}},
             {"action":"Deny","futureRule":"second"}]},
"futureTop":42}`

// TestReadModifyWriteKeepsUnknownFields: label, patch and apply of an object written by a newer
// Project Calico keep every field our types do not know; a rule the write changed loses its
// own unknown fields rather than passing them to another rule.
func TestReadModifyWriteKeepsUnknownFields(t *testing.T) {
	h := newHarness(t)
	h.put(futurePolicyKey, futurePolicy)
	h.ok("", "label", "globalnetworkpolicy", "future", "team=red")
	h.ok("", "patch", "globalnetworkpolicy", "future", "-p", `{"spec":{"order":20}}`)
	h.ok(`apiVersion: projectcalico.org/v3
kind: GlobalNetworkPolicy
metadata: {name: future, labels: {team: blue}}
spec:
  order: 30
  selector: all()
  types: [Ingress]
  ingress:
  - action: Allow
    source: {nets: [10.65.0.0/16]}
  - action: Log
`, "apply", "-f", "-")
	got := h.get(futurePolicyKey)
	md, spec := metaOf(got), specOf(got)
	if got["futureTop"] != float64(42) || md["futureMeta"] != "m" || spec["futureSpec"] == nil {
		t.Errorf("unknown fields lost: %v", got)
	}
	if md["labels"].(map[string]any)["team"] != "blue" || spec["order"] != float64(30) {
		t.Errorf("the writes did not land: %v", got)
	}
	ingress := spec["ingress"].([]any)
	first, second := ingress[0].(map[string]any), ingress[1].(map[string]any)
	if first["futureRule"] != true || first["source"].(map[string]any)["futureEntity"] != "e" {
		t.Errorf("the unchanged rule lost its unknown fields: %v", first)
	}
	if _, ok := second["futureRule"]; ok || second["action"] != "Log" {
		t.Errorf("the changed rule kept the old rule's unknown field: %v", second)
	}
	if md["uid"] != "0b2e1c3a-8d7f-4a51-9c3e-2f1d0a9b8c7d" {
		t.Errorf("uid changed: %v", md)
	}
}
