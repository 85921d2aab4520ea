package startup

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/daemon"
	"github.com/calico-host/calico-host/pkg/datastore"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
	"github.com/calico-host/calico-host/pkg/ipam"
)

// BenchmarkRegisterNoop measures a registration that finds everything in place (the cost of a
// restart, and of every monitor round without changes, which is a subset).
func BenchmarkRegisterNoop(b *testing.B) {
	s := etcdtest.Start(b)
	ds, err := datastore.New(s.Datastore())
	if err != nil {
		b.Fatal(err)
	}
	defer ds.Close()
	env := envMap{"NODENAME": "host-z", "CALICO_IPV4POOL_CIDR": "10.65.0.0/16", "CALICO_NODENAME_FILE": b.TempDir() + "/nodename"}
	cfg, err := LoadConfig("/nonexistent", env.lookup)
	if err != nil {
		b.Fatal(err)
	}
	log := zerolog.Nop()
	st, err := New(cfg, Deps{Datastore: ds, Kernel: fixtureHost(), IPAM: ipam.New(ds, log), Notifier: daemon.NewNotifier(log), Log: log, Env: env.lookup})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := st.RunOnce(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := st.RunOnce(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDetect measures first-found over a host with many interfaces.
func BenchmarkDetect(b *testing.B) {
	var ifaces []Interface
	for i := 1; i <= 200; i++ {
		ifaces = append(ifaces, iface(i, fmt.Sprintf("cali%04d", i), fmt.Sprintf("198.18.%d.1/32", i)))
	}
	ifaces = append([]Interface{iface(0, "eth0", "198.18.0.2/24")}, ifaces...)
	m, _ := ParseMethod("first-found")
	k := NewFakeKernel()
	for b.Loop() {
		if _, err := m.Detect(context.Background(), k, ifaces, V4); err != nil {
			b.Fatal(err)
		}
	}
}
