package ipip

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Project Calico's names and defaults (dataplanedefs, config_params.go).
const (
	DeviceName = "tunl0"
	// Overhead is the outer IPv4 header subtracted from the host MTU for the default MTU.
	Overhead = 20
)

// ErrNoDriver is returned by a Handle when the kernel cannot create a link of kind ipip.
var ErrNoDriver = errors.New("the kernel has no ipip driver (link kind ipip unknown)")

// State is the device's condition after an Apply.
type State int

// States.
const (
	StateOff      State = iota // IPIP not wanted: no address on tunl0
	StateReady                 // tunl0 is up with the tunnel address and MTU
	StateNoDriver              // the kernel cannot create tunl0
	StateFailed                // programming tunl0 failed (see the error)
)

func (s State) String() string {
	return [...]string{"off", "ready", "no ipip driver", "failed"}[s]
}

// Device is the desired tunl0.
type Device struct {
	MTU  int        // 0: the host MTU less Overhead
	Addr netip.Addr // this host's IPIP tunnel address (IPv4)
}

// Link is tunl0 as the Tunnel needs to see it.
type Link struct {
	Index int
	Kind  string // "ipip" for ours
	Up    bool
	MTU   int
}

// Handle is the Tunnel's access to one network namespace. Netlink implements it; Fake records
// its requests in memory.
type Handle interface {
	// Link returns the named interface, or nil (and no error) if there is none.
	Link(name string) (*Link, error)
	// AddIPIP creates a link of kind ipip named name with the MTU; ErrNoDriver when the kernel
	// does not know the kind.
	AddIPIP(name string, mtu int) error
	SetMTU(index, mtu int) error
	SetUp(index int) error
	// Addrs lists the interface's IPv4 addresses.
	Addrs(ctx context.Context, index int) ([]netip.Prefix, error)
	AddAddr(index int, p netip.Prefix) error
	DelAddr(index int, p netip.Prefix) error
}

// Tunnel keeps tunl0. Apply must not run concurrently with itself; RequestResync and
// InterfaceChanged may be called from any goroutine.
type Tunnel struct {
	h       Handle
	log     zerolog.Logger
	hostMTU func(context.Context) (int, error)
	resync  atomic.Bool

	applied *Device // what the device last converged on; nil: check it
	state   State
	logged  State // the last state logged (the no-driver report is logged once)
}

// New returns a Tunnel over h. hostMTU gives the host MTU for Device.MTU 0 (nil: 1500).
func New(h Handle, log zerolog.Logger, hostMTU func(context.Context) (int, error)) *Tunnel {
	t := &Tunnel{h: h, log: log, hostMTU: hostMTU, logged: StateOff}
	t.resync.Store(true)
	return t
}

// RequestResync makes the next Apply check the device again (and retry a missing driver).
func (t *Tunnel) RequestResync() { t.resync.Store(true) }

// InterfaceChanged makes the next Apply check tunl0 when name is tunl0.
func (t *Tunnel) InterfaceChanged(name string) {
	if name == DeviceName {
		t.resync.Store(true)
	}
}

// State is the condition after the last Apply.
func (t *Tunnel) State() State { return t.state }

// Apply converges tunl0 on want (nil: IPIP off) and returns the resulting state. StateNoDriver
// comes with no error: it is reported through the state, logged once, and retried at a resync.
func (t *Tunnel) Apply(ctx context.Context, want *Device) (State, error) {
	resync := t.resync.Swap(false)
	if !resync && t.unchanged(want) {
		return t.state, nil
	}
	st, err := t.apply(ctx, want)
	t.state, t.applied = st, nil
	switch {
	case err != nil:
		t.resync.Store(true)
	case want != nil:
		d := *want
		t.applied = &d
	}
	t.report(st, err)
	return st, err
}

func (t *Tunnel) unchanged(want *Device) bool {
	switch {
	case t.state == StateNoDriver:
		return want != nil // retried at a resync, or when IPIP goes off
	case want == nil:
		return t.state == StateOff
	}
	return t.state == StateReady && t.applied != nil && *t.applied == *want
}

func (t *Tunnel) apply(ctx context.Context, want *Device) (State, error) {
	if want == nil {
		return StateOff, t.clear(ctx)
	}
	if !want.Addr.Is4() {
		return StateFailed, fmt.Errorf("%s: tunnel address %s is not IPv4", DeviceName, want.Addr)
	}
	mtu, err := t.mtu(ctx, want.MTU)
	if err != nil {
		return StateFailed, err
	}
	l, err := t.ensureLink(mtu)
	if errors.Is(err, ErrNoDriver) {
		return StateNoDriver, nil
	}
	if err != nil {
		return StateFailed, err
	}
	if err := t.converge(ctx, l, mtu, netip.PrefixFrom(want.Addr, 32)); err != nil {
		return StateFailed, err
	}
	return StateReady, nil
}

func (t *Tunnel) mtu(ctx context.Context, configured int) (int, error) {
	if configured > 0 {
		return configured, nil
	}
	host := 1500
	if t.hostMTU != nil {
		var err error
		if host, err = t.hostMTU(ctx); err != nil {
			return 0, fmt.Errorf("finding the host MTU for %s: %w", DeviceName, err)
		}
	}
	return host - Overhead, nil
}

// ensureLink finds tunl0 or creates it.
func (t *Tunnel) ensureLink(mtu int) (*Link, error) {
	l, created, err := EnsureLink(t.h, mtu)
	if created {
		t.log.Info().Str("device", DeviceName).Int("mtu", mtu).Msg("Created the IPIP tunnel device")
	}
	return l, err
}

// EnsureLink finds tunl0 or creates it (mtu 0: the kernel's default), as calico-felix needs it:
// an ipip link. ErrNoDriver: the kernel has no ipip driver. created: this call created it.
func EnsureLink(h Handle, mtu int) (l *Link, created bool, err error) {
	if l, err = h.Link(DeviceName); err != nil {
		return nil, false, fmt.Errorf("looking up %s: %w", DeviceName, err)
	}
	if l == nil {
		err := h.AddIPIP(DeviceName, mtu)
		if errors.Is(err, ErrNoDriver) {
			return nil, false, err
		}
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, false, fmt.Errorf("creating %s: %w", DeviceName, err)
		}
		created = err == nil
		if l, err = h.Link(DeviceName); err != nil || l == nil {
			return nil, created, fmt.Errorf("looking up %s after creating it: %v", DeviceName, err)
		}
	}
	if l.Kind != "ipip" {
		return nil, created, fmt.Errorf("%s exists but is a %q link, not ipip", DeviceName, l.Kind)
	}
	return l, created, nil
}

// converge sets the MTU, makes addr the only IPv4 address and sets the device up.
func (t *Tunnel) converge(ctx context.Context, l *Link, mtu int, addr netip.Prefix) error {
	if l.MTU != mtu {
		if err := t.h.SetMTU(l.Index, mtu); err != nil {
			return fmt.Errorf("setting the MTU of %s to %d: %w", DeviceName, mtu, err)
		}
	}
	if err := t.setAddrs(ctx, l.Index, addr); err != nil {
		return err
	}
	if !l.Up {
		if err := t.h.SetUp(l.Index); err != nil {
			return fmt.Errorf("setting %s up: %w", DeviceName, err)
		}
	}
	return nil
}

// setAddrs makes want (invalid: none) the device's only IPv4 address.
func (t *Tunnel) setAddrs(ctx context.Context, index int, want netip.Prefix) error {
	have, err := t.h.Addrs(ctx, index)
	if err != nil {
		return fmt.Errorf("listing the addresses of %s: %w", DeviceName, err)
	}
	found := false
	for _, p := range have {
		if p == want {
			found = true
			continue
		}
		if err := t.h.DelAddr(index, p); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			return fmt.Errorf("removing %s from %s: %w", p, DeviceName, err)
		}
	}
	if want.IsValid() && !found {
		if err := t.h.AddAddr(index, want); err != nil {
			return fmt.Errorf("adding %s to %s: %w", want, DeviceName, err)
		}
	}
	return nil
}

// clear removes the addresses of an existing tunl0 (IPIP off).
func (t *Tunnel) clear(ctx context.Context) error {
	l, err := t.h.Link(DeviceName)
	if err != nil {
		return fmt.Errorf("looking up %s: %w", DeviceName, err)
	}
	if l == nil || l.Kind != "ipip" {
		return nil
	}
	return t.setAddrs(ctx, l.Index, netip.Prefix{})
}

// report logs a change of state; the missing driver is logged once until the state changes.
func (t *Tunnel) report(st State, err error) {
	switch {
	case err != nil:
		t.log.Warn().Err(err).Str("device", DeviceName).Msg("Programming the IPIP tunnel device failed; retrying")
	case st == t.logged:
	case st == StateNoDriver:
		t.log.Error().Str("device", DeviceName).Err(ErrNoDriver).
			Msg("Cannot create the IPIP tunnel device: routes of IPIP pools are not programmed (load the ipip module, or use VXLAN pools)")
	case st == StateReady:
		t.log.Info().Str("device", DeviceName).Msg("IPIP tunnel device ready")
	case st == StateOff:
		t.log.Info().Str("device", DeviceName).Msg("IPIP off: no address on the tunnel device")
	}
	if err == nil {
		t.logged = st
	}
}
