package felix

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/calc"
	"github.com/calico-host/calico-host/pkg/felix/config"
)

// TestCheckClusterRoutes: felix warns, once per change, naming ProgramClusterRoutes, when it and
// BGPConfiguration's programClusterRoutes both program a pool type in use or neither does, and
// when it leaves IPIP pools to BIRD; the consistent pairs of Project Calico's table, and pool
// types not in use, say nothing.
func TestCheckClusterRoutes(t *testing.T) {
	const ipip, noEncap = calc.ClusterRoutesIPIP, calc.ClusterRoutesNoEncap
	var buf bytes.Buffer
	d := &Daemon{log: zerolog.New(&buf), cfg: &config.Config{}}
	steps := []struct {
		felix, bird, pools calc.ClusterRoutes
		want               []string // message starts, in order; nil: silent
	}{
		{ipip, noEncap, ipip | noEncap, nil},     // the defaults
		{ipip | noEncap, 0, ipip | noEncap, nil}, // felix owns everything
		{ipip | noEncap, noEncap, ipip | noEncap, []string{"ProgramClusterRoutes: felix and BIRD"}},
		{ipip | noEncap, noEncap, ipip | noEncap, nil}, // unchanged: said already
		{ipip | noEncap, noEncap, ipip, nil},           // no unencapsulated pool any more
		{0, noEncap, ipip | noEncap, []string{"ProgramClusterRoutes: neither", "ProgramClusterRoutes leaves the IPIP"}},
		{0, ipip | noEncap, ipip | noEncap, []string{"ProgramClusterRoutes leaves the IPIP"}},
		{noEncap, ipip, noEncap, nil},
	}
	for i, st := range steps {
		buf.Reset()
		d.cfg.ProgramClusterRoutes = st.felix
		d.checkClusterRoutes(calc.Facts{BIRDClusterRoutes: st.bird, ClusterRoutePools: st.pools})
		var got []string
		for l := range strings.Lines(buf.String()) {
			if !strings.Contains(l, `"param":"ProgramClusterRoutes"`) || !strings.Contains(l, `"level":"warn"`) {
				t.Errorf("step %d: %s", i, l)
			}
			for _, w := range st.want {
				if strings.Contains(l, `"message":"`+w) {
					got = append(got, w)
				}
			}
		}
		if strings.Join(got, "|") != strings.Join(st.want, "|") || strings.Count(buf.String(), "\n") != len(st.want) {
			t.Errorf("step %d (felix %s, BIRD %s, pools %v): logged\n%s\nwant %q", i, st.felix, st.bird, st.pools.Kinds(), buf.String(), st.want)
		}
	}
}
