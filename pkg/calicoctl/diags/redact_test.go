package diags

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRedactText: each input holds secrets (which must go) and ordinary content (which must stay).
func TestRedactText(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		secrets []string
		keep    []string
	}{
		{"toml etcd credentials", "[etcd]\nendpoints = [\"https://127.0.0.1:2379\"]\nusername = \"u-1\"\npassword = 'p-1'\nkey_file = \"/etc/calico/pki/k-1.pem\"\n# password = \"old-1\"\n",
			[]string{"u-1", "p-1", "k-1", "old-1"}, []string{"[etcd]", "endpoints = [\"https://127.0.0.1:2379\"]", "username = REDACTED"}},
		{"toml multi-line", "token = \"\"\"\nml-1\nml-2\n\"\"\"\nafter = 1\n", []string{"ml-1", "ml-2"}, []string{"after = 1"}},
		{"yaml block scalar", "spec:\n  secret: |\n    yb-1\n    yb-2\n  other: kept-1\n", []string{"yb-1", "yb-2"}, []string{"other: kept-1", "spec:"}},
		{"yaml list item", "- password: yl-1\n- name: kept-2\n", []string{"yl-1"}, []string{"name: kept-2"}},
		{"env file", "ETCD_PASSWORD=e-1\nexport CALICO_ETCD_USERNAME=\"e-2\"\nETCD_ENDPOINTS=http://127.0.0.1:2379\n", []string{"e-1", "e-2"}, []string{"ETCD_ENDPOINTS=http://127.0.0.1:2379"}},
		{"bird password", "protocol bgp Mesh_198_18_0_2 from bgp_template {\n  neighbor 198.18.0.2 as 64512;\n  password \"b-1\";\n}\n", []string{"b-1"}, []string{"neighbor 198.18.0.2 as 64512;", "password \"REDACTED\";"}},
		{"pem private key", "-----BEGIN CERTIFICATE-----\nCERTKEEP\n-----END CERTIFICATE-----\n-----BEGIN RSA PRIVATE KEY-----\nPK-1\n-----END RSA PRIVATE KEY-----\n-----BEGIN OPENSSH PRIVATE KEY-----\nPK-2\n",
			[]string{"PK-1", "PK-2"}, []string{"CERTKEEP", "-----BEGIN RSA PRIVATE KEY-----"}},
		{"url credentials", "dialing https://uu-1:up-1@etcd.example:2379 and http://uo-1@127.0.0.1:2379\n", []string{"uu-1", "up-1", "uo-1"}, []string{"etcd.example:2379", "127.0.0.1:2379"}},
		{"json lines", "{\"level\":\"info\",\"etcdPassword\":\"j-1\",\"msg\":\"started felix\"}\n{\"wireguardPrivateKey\": 42, \"msg\":\"k\"}\n", []string{"j-1", "42"}, []string{"started felix"}},
		{"logfmt and text", "level=info bgp_password=l-1 msg=ok\nusing token: l-2 for x\ncalico-felix --etcd-password l-3 --log info\n", []string{"l-1", "l-2", "l-3"}, []string{"msg=ok", "--log info", "for x"}},
		{"wireguard", "[Interface]\nPrivateKey = wg-1\nListenPort = 51820\n", []string{"wg-1"}, []string{"ListenPort = 51820"}},
		{"nft untouched", "table inet calico-host {\n\tset cali40-s-abc {\n\t\ttype ipv4_addr\n\t\tflags interval\n\t\telements = { 10.65.0.0/16 }\n\t}\n\tchain filter-FORWARD {\n\t\ttype filter hook forward priority filter; policy accept;\n\t\tct state established,related accept\n\t}\n}\n",
			nil, []string{"type filter hook forward priority filter; policy accept;", "elements = { 10.65.0.0/16 }", "ct state established,related accept"}},
	} {
		got := string(RedactText([]byte(tc.in)))
		for _, s := range tc.secrets {
			if strings.Contains(got, s) {
				t.Errorf("%s: secret %q kept:\n%s", tc.name, s, got)
			}
		}
		for _, k := range tc.keep {
			if !strings.Contains(got, k) {
				t.Errorf("%s: %q lost:\n%s", tc.name, k, got)
			}
		}
	}
}

// TestRedactJSONDocument: a JSON document is redacted by structure (any value type under a
// secret-named key) and stays valid JSON.
func TestRedactJSONDocument(t *testing.T) {
	in := `{"name":"k8s-pod-network","etcd_key_file":"/x","policy":{"k8s_auth_token":"tok-1","type":"k8s"},
"ipam":{"type":"calico-ipam","secrets":{"a":"s-1"},"list":[{"password":["s-2"]}]}}`
	got := RedactText([]byte(in))
	var v map[string]any
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatalf("not JSON any more: %v\n%s", err, got)
	}
	for _, s := range []string{"tok-1", "s-1", "s-2", "/x"} {
		if strings.Contains(string(got), s) {
			t.Errorf("secret %q kept:\n%s", s, got)
		}
	}
	if v["name"] != "k8s-pod-network" || v["ipam"].(map[string]any)["type"] != "calico-ipam" {
		t.Errorf("content lost:\n%s", got)
	}
}
