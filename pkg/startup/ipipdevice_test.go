package startup

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/internal/logtest"
	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/daemon/notifytest"
	"github.com/calico-host/calico-host/pkg/ipip"
	"github.com/calico-host/calico-host/pkg/netnstest"
)

func ipipGauge(s *Startup, st ipipDeviceState) float64 {
	return testutil.ToFloat64(s.metrics.ipipDevice.WithLabelValues(string(st)))
}

// TestIPIPPoolWithoutDriverIsReported: with an IPIP pool and a kernel that has no ipip driver
// (the startup kernel fake over package ipip's fake), the running service logs an error naming
// the pool, sets calico_startup_ipip_device_state to "no ipip driver" and says so on STATUS;
// once the pool stops using IPIP, the warning goes and the state is off.
func TestIPIPPoolWithoutDriverIsReported(t *testing.T) {
	sock := notifytest.Listen(t, 0)
	env := fixtureEnv(t)
	env["CALICO_IPV4POOL_VXLAN"] = "Never"
	env["CALICO_IPV4POOL_IPIP"] = "Always"
	k := fixtureHost()
	k.IPIP.NoDriver = true
	h := newHarness(t, env, k)
	s := h.startup()
	var logs logtest.Buffer
	s.log = zerolog.New(&logs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	sock.WaitFor(t, "STATUS=Ready: node host-z registered; monitoring addresses and tunnel; WARNING: IPIP pool "+
		DefaultIPv4PoolName+": tunl0 is not available (no ipip driver)", 30*time.Second)
	if v := ipipGauge(s, ipipNoDriver); v != 1 {
		t.Errorf("calico_startup_ipip_device_state{state=\"no ipip driver\"} = %v, want 1", v)
	}
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"level":"error"`) && strings.Contains(l, "no ipip driver") {
			line = l
		}
	}
	if !strings.Contains(line, `"pools":["`+DefaultIPv4PoolName+`"]`) || !strings.Contains(line, `"device":"tunl0"`) {
		t.Errorf("no error line naming the pool and tunl0:\n%s", logs.String())
	}
	if got := strings.Count(logs.String(), "no ipip driver:"); got != 1 {
		t.Errorf("the missing driver is logged %d times, want once:\n%s", got, logs.String())
	}

	h.setPoolIPIP(DefaultIPv4PoolName, api.EncapNever)
	sock.WaitFor(t, "STATUS=Ready: node host-z registered; monitoring addresses and tunnel", 30*time.Second)
	eventually(t, 10*time.Second, "IPIP device state off", func() bool { return ipipGauge(s, ipipOff) == 1 })
	if v := ipipGauge(s, ipipNoDriver); v != 0 {
		t.Errorf("no ipip driver gauge %v after the pool stopped using IPIP", v)
	}
}

// TestIPIPDeviceCheck: the check is felix's request for tunl0 (package ipip's Handle): a kernel
// with the driver creates tunl0 and the check passes; a tunl0 of another kind fails it; no IPIP
// pool, no request at all.
func TestIPIPDeviceCheck(t *testing.T) {
	k := fixtureHost()
	if err := k.IPIPDevice(); err != nil {
		t.Fatalf("with the driver: %v", err)
	}
	if got := k.IPIP.Dump(); !strings.HasPrefix(got, "tunl0 ipip") {
		t.Errorf("tunl0 after the check: %q", got)
	}
	if err := k.IPIPDevice(); err != nil { // tunl0 is there now
		t.Fatalf("again: %v", err)
	}
	other := fixtureHost()
	other.IPIP.AddLink("tunl0", "dummy", 1500, true)
	if err := other.IPIPDevice(); err == nil || errors.Is(err, ipip.ErrNoDriver) {
		t.Errorf("tunl0 of kind dummy: %v", err)
	}

	h := newHarness(t, fixtureEnv(t), fixtureHost()) // a VXLAN pool only
	s := h.startup()
	if err := s.RunOnce(ctxT(t, 60*time.Second)); err != nil {
		t.Fatal(err)
	}
	if req := h.kernel.(*FakeKernel).IPIP.Requests(); len(req) != 0 || ipipGauge(s, ipipOff) != 1 {
		t.Errorf("no IPIP pool: requests %v, off gauge %v", req, ipipGauge(s, ipipOff))
	}
}

// TestIPIPDeviceRealKernel runs the check in a fresh network namespace of this kernel and
// compares it with iproute2 creating an ipip link there: both succeed, or the check reports
// ipip.ErrNoDriver where iproute2 says the device type is unknown (this test machine has no
// ipip driver). Then a whole RunOnce with that kernel and an IPIP pool reports the state.
func TestIPIPDeviceRealKernel(t *testing.T) {
	n := standardHost(t)
	k := n.kernel()
	err := k.IPIPDevice()
	out, ipErr := netnstest.New(t, "ipip-probe").Try("ip", "link", "add", "probe0", "type", "ipip")
	switch {
	case ipErr == nil && err == nil:
		t.Log("this kernel has the ipip driver: the check passed")
	case ipErr != nil && strings.Contains(out, "Unknown device type") && errors.Is(err, ipip.ErrNoDriver):
		t.Logf("this kernel has no ipip driver (iproute2: %s): the check says %v", strings.TrimSpace(out), err)
	default:
		t.Fatalf("check %v, iproute2 %v: %s", err, ipErr, out)
	}

	env := fixtureEnv(t)
	env["CALICO_IPV4POOL_VXLAN"] = "Never"
	env["CALICO_IPV4POOL_IPIP"] = "CrossSubnet"
	env["IP_AUTODETECTION_METHOD"] = "interface=ens1"
	h := newHarness(t, env, k)
	s := h.startup()
	if err := s.RunOnce(ctxT(t, 60*time.Second)); err != nil {
		t.Fatal(err)
	}
	want := ipipAvailable
	if ipErr != nil {
		want = ipipNoDriver
	}
	if v := ipipGauge(s, want); v != 1 {
		t.Errorf("calico_startup_ipip_device_state{state=%q} = %v, want 1", want, v)
	}
}

// countingKernel counts the tunl0 checks that reach the kernel.
type countingKernel struct {
	*FakeKernel
	checks int
}

func (k *countingKernel) IPIPDevice() error { k.checks++; return k.FakeKernel.IPIPDevice() }

// TestIPIPDeviceCheckedOnce: once tunl0 was found for the IPIP pools, later reconciles do not
// ask the kernel again until the pools change; a missing driver is asked about every time.
func TestIPIPDeviceCheckedOnce(t *testing.T) {
	h := newHarness(t, fixtureEnv(t), fixtureHost())
	s := h.startup()
	k := &countingKernel{FakeKernel: h.kernel.(*FakeKernel)}
	s.kernel = k
	pools := []*api.IPPool{{ObjectMeta: api.ObjectMeta{Name: "p"}, Spec: api.IPPoolSpec{CIDR: "10.65.0.0/16", IPIPMode: api.EncapAlways}}}
	s.checkIPIP(pools)
	s.checkIPIP(pools)
	if k.checks != 1 || ipipGauge(s, ipipAvailable) != 1 {
		t.Errorf("two reconciles with the same pools: %d kernel checks, want 1; available gauge %v", k.checks, ipipGauge(s, ipipAvailable))
	}
	pools = append(pools, &api.IPPool{ObjectMeta: api.ObjectMeta{Name: "q"}, Spec: api.IPPoolSpec{CIDR: "10.66.0.0/16", IPIPMode: api.EncapCrossSubnet}})
	s.checkIPIP(pools)
	if k.checks != 2 {
		t.Errorf("a new IPIP pool: %d kernel checks, want 2", k.checks)
	}
	other := fixtureHost()
	other.IPIP.NoDriver = true
	k.FakeKernel = other // a kernel without the driver: asked every time
	pools = pools[:1]
	s.checkIPIP(pools)
	s.checkIPIP(pools)
	if k.checks != 4 || ipipGauge(s, ipipNoDriver) != 1 {
		t.Errorf("no driver: %d kernel checks, want 4; no-driver gauge %v", k.checks, ipipGauge(s, ipipNoDriver))
	}
}
