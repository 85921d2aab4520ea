package confd

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/syncer"
)

// TestOnetimeRendersCurrentState: calico-confd --onetime renders what etcd holds when it starts.
// Its syncer lists at a revision rounded down to a multiple of ListQuantum; the 13 BGPPeers
// written after such a revision must all be sessions in the files it writes.
func TestOnetimeRendersCurrentState(t *testing.T) {
	requireBIRD(t)
	srv := etcdtest.Start(t)
	st := store{t: t, cli: srv.Client()}
	node := &api.Node{ObjectMeta: api.ObjectMeta{Name: "host-a"}}
	node.Spec.BGP = &api.NodeBGPSpec{IPv4Address: "198.18.0.1/24"}
	st.put(node, &api.BGPConfiguration{ObjectMeta: api.ObjectMeta{Name: "default"},
		Spec: api.BGPConfigurationSpec{NodeToNodeMeshEnabled: api.Bool(false)}})
	for rev := int64(1); rev%syncer.DefaultListQuantum != 0; {
		resp, err := srv.Client().Put(context.Background(), "/filler", "x")
		if err != nil {
			t.Fatal(err)
		}
		rev = resp.Header.Revision
	}
	want := map[string]bool{}
	for i := range 13 {
		ip := fmt.Sprintf("198.18.1.%d", i+1)
		st.put(&api.BGPPeer{ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("peer-%d", i)},
			Spec: api.BGPPeerSpec{PeerIP: ip, ASNumber: asn(64513)}})
		want[pname(PeerGlobal, ip, 0)] = true
	}

	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	tmpl, _ := filepath.Abs(templatesDir)
	writeFile(t, filepath.Join(dir, "confd.toml"), fmt.Sprintf("templates_dir = %q\noutput_dir = %q\nconf_dir = %q\nbird_socket = %q\nlog_severity = \"Error\"\n",
		tmpl, out, filepath.Join(dir, "conf.d"), filepath.Join(dir, "bird.ctl")))
	writeFile(t, filepath.Join(dir, "datastore.toml"), fmt.Sprintf("[etcd]\nendpoints = [%q]\n", srv.Endpoints[0]))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env := func(k string) (string, bool) { return map[string]string{"NODENAME": "host-a"}[k], k == "NODENAME" }
	if err := Main(ctx, Options{ConfigFile: filepath.Join(dir, "confd.toml"), DatastoreFile: filepath.Join(dir, "datastore.toml"),
		Onetime: true, Env: env}, io.Discard); err != nil {
		t.Fatal(err)
	}
	peers, err := os.ReadFile(filepath.Join(out, "bird_peers.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^protocol bgp (\S+) `).FindAllStringSubmatch(string(peers), -1) {
		got[m[1]] = true
	}
	for name := range want {
		if !got[name] {
			t.Errorf("session %s missing from the rendered configuration (sessions: %v)", name, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d sessions rendered, want %d", len(got), len(want))
	}
}
