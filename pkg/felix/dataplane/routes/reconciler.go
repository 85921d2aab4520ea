package routes

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Stats describes one Apply.
type Stats struct {
	Full     bool // our routes were re-read from the kernel first
	Replaced int  // routes added or replaced
	Deleted  int  // routes of ours removed
	Pending  int  // desired routes whose device does not exist (yet)
	Failed   int  // routes that could not be written or deleted, or were invalid
	Refused  int  // workload routes left out: they hold a next hop of the host's routes
	Duration time.Duration
}

// Reconciler converges the routes its Ownership says are ours on the desired list. Apply must not be
// called concurrently; RequestResync and InterfaceChanged may be called from any goroutine.
type Reconciler struct {
	h      Handle
	own    Ownership
	log    zerolog.Logger
	resync atomic.Bool

	mu sync.Mutex // guards staleDevs (written by InterfaceChanged)
	// staleDevs are devices reported changed since the last Apply: their cached index is dropped
	// and routes through them are rewritten (a re-created device lost its routes).
	staleDevs map[string]bool

	// mirror is our routes in the kernel as far as we know: what was read at the last resync,
	// plus what we achieved since (tracked = achieved).
	mirror map[key]KernelRoute
	// links caches interface indexes; linksFresh says it was refreshed during this Apply.
	links      map[string]int
	linksFresh bool
	// hostHops are the next hops of the host's routes (not ours, not through a workload
	// interface) as read at the last resync, each with one route using it (for logs);
	// refused are the routes left out by the last Apply for holding one (logged when new).
	hostHops map[netip.Addr]string
	refused  map[key]bool
}

// New returns a Reconciler owning the routes own describes (a zero Protocol is DefaultProtocol).
// The first Apply reads the kernel.
func New(h Handle, own Ownership, log zerolog.Logger) *Reconciler {
	if own.Protocol == 0 {
		own.Protocol = DefaultProtocol
	}
	if !slices.Contains(own.Exclusive, own.Protocol) {
		own.Exclusive = append(slices.Clone(own.Exclusive), own.Protocol)
	}
	r := &Reconciler{h: h, own: own, log: log, staleDevs: map[string]bool{}}
	r.resync.Store(true)
	return r
}

// RequestResync makes the next Apply re-read our routes from the kernel (RouteRefreshInterval).
func (r *Reconciler) RequestResync() { r.resync.Store(true) }

// InterfaceChanged tells the Reconciler that an interface appeared, disappeared or was re-created,
// so that its index is looked up again and routes through it are rewritten on the next Apply.
// Calling it for every interface event is cheap.
func (r *Reconciler) InterfaceChanged(name string) {
	r.mu.Lock()
	r.staleDevs[name] = true
	r.mu.Unlock()
}

// Apply converges the kernel on desired: it adds or replaces every missing or different route
// first, then deletes our routes that are no longer desired. Routes whose device does not exist
// or is down are counted in Stats.Pending and retried by later Applies (call InterfaceChanged, or
// just Apply again, when interfaces appear or come up). It keeps going after a failure and returns all errors joined;
// any failure makes the next Apply re-read the kernel.
func (r *Reconciler) Apply(ctx context.Context, desired []Route) (Stats, error) {
	start := time.Now()
	var st Stats
	r.linksFresh = false
	stale := r.takeStaleDevs()
	if r.resync.Swap(false) || r.mirror == nil {
		if err := r.readKernel(ctx); err != nil {
			r.resync.Store(true)
			return st, fmt.Errorf("reading routes: %w", err)
		}
		st.Full = true
	}
	want, errs := r.index(desired, &st)
	st.Failed += len(errs)
	errs = append(errs, r.writeDesired(ctx, want, stale, &st)...)
	errs = append(errs, r.deleteUndesired(want, &st)...)
	if len(errs) > 0 {
		r.resync.Store(true)
	}
	st.Duration = time.Since(start)
	r.logApply(st, len(want.routes))
	return st, errors.Join(errs...)
}

func (r *Reconciler) takeStaleDevs() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	stale := r.staleDevs
	r.staleDevs = map[string]bool{}
	for name := range stale {
		delete(r.links, name)
	}
	return stale
}

// readKernel replaces the mirror with our routes as the kernel has them.
func (r *Reconciler) readKernel(ctx context.Context) error {
	if err := r.refreshLinks(ctx); err != nil {
		return err
	}
	krs, err := r.h.ListRoutes(ctx)
	if err != nil {
		return err
	}
	names := make(map[int]string, len(r.links))
	for name, idx := range r.links {
		names[idx] = name
	}
	r.mirror = make(map[key]KernelRoute, len(krs))
	r.hostHops = map[netip.Addr]string{}
	for _, kr := range krs {
		kr.Dev = names[kr.LinkIndex]
		switch {
		case r.own.owns(kr):
			r.mirror[kr.key()] = kr
		case !r.own.IsWorkload(kr.Dev): // BIRD's routes via local workload peers are not the host's
			for _, gw := range kr.gateways() {
				r.hostHops[gw] = kr.Route.String()
			}
		}
	}
	return nil
}

// takesHostHop reports whether c, a canonical route, is through a workload interface and holds
// a next hop of the host's routes: written, it would take the host's traffic to that next hop
// (a workload claiming the host's default gateway would take every packet the host routes out).
func (r *Reconciler) takesHostHop(c Route) (hop netip.Addr, hostRoute string, ok bool) {
	if !r.own.IsWorkload(c.Dev) {
		return hop, "", false
	}
	for hop, hostRoute := range r.hostHops {
		if c.Dst.Contains(hop) {
			return hop, hostRoute, true
		}
	}
	return hop, "", false
}

func (r *Reconciler) refreshLinks(ctx context.Context) error {
	links, err := r.h.LinkIndexes(ctx)
	if err != nil {
		return fmt.Errorf("listing interfaces: %w", err)
	}
	r.links, r.linksFresh = links, true
	return nil
}

// linkIndex resolves a device name, refreshing the cache at most once per Apply.
func (r *Reconciler) linkIndex(ctx context.Context, dev string) (int, bool, error) {
	if idx, ok := r.links[dev]; ok {
		return idx, true, nil
	}
	if r.linksFresh {
		return 0, false, nil
	}
	if err := r.refreshLinks(ctx); err != nil {
		return 0, false, err
	}
	idx, ok := r.links[dev]
	return idx, ok, nil
}

// wanted is the desired routes in kernel form, indexed as the kernel keys them.
type wanted struct {
	routes []KernelRoute
	byKey  map[key]int // index in routes (small map values keep the map cheap)
}

func (w *wanted) has(k key) bool { _, ok := w.byKey[k]; return ok }

// index validates and canonicalises the desired routes, leaving out (and logging once) the
// workload routes that would take a next hop of the host's routes: the host's routes keep
// precedence. Those are not errors: the rest of the apply goes on.
func (r *Reconciler) index(desired []Route, st *Stats) (*wanted, []error) {
	w := &wanted{routes: make([]KernelRoute, 0, len(desired)), byKey: make(map[key]int, len(desired))}
	var errs []error
	refused := map[key]bool{}
	for _, d := range desired {
		c, err := canonical(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if hop, hostRoute, ok := r.takesHostHop(c); ok {
			k := KernelRoute{Route: c}.key()
			if refused[k] = true; !r.refused[k] {
				r.log.Error().Str("route", c.String()).Str("owner", d.Owner).Str("next_hop", hop.String()).
					Str("host_route", hostRoute).Msg("Leaving out a workload route: it holds a next hop of the host's own routes, which keep precedence")
			}
			st.Refused++
			continue
		}
		if c.Protocol == 0 {
			c.Protocol = r.own.Protocol
		}
		kr := KernelRoute{Route: c}
		if i, dup := w.byKey[kr.key()]; dup {
			if prev := w.routes[i].Route; prev != c {
				errs = append(errs, fmt.Errorf("route %s conflicts with %s; keeping the first", c, prev))
			}
			continue
		}
		w.byKey[kr.key()] = len(w.routes)
		w.routes = append(w.routes, kr)
	}
	r.refused = refused
	return w, errs
}

// writeDesired adds or replaces every desired route that the mirror does not show as present.
func (r *Reconciler) writeDesired(ctx context.Context, want *wanted, stale map[string]bool, st *Stats) []error {
	var errs []error
	for _, w := range want.routes {
		k := w.key()
		if w.Dev != "" {
			idx, ok, err := r.linkIndex(ctx, w.Dev)
			if err != nil {
				return append(errs, err)
			}
			if !ok {
				delete(r.mirror, k) // the kernel dropped it with its device
				st.Pending++
				continue
			}
			w.LinkIndex = idx
		}
		if have, ok := r.mirror[k]; ok && same(have, w) && !stale[w.Dev] {
			continue
		}
		if err := r.h.ReplaceRoute(w); err != nil {
			if errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENETDOWN) {
				// The device is gone (or was re-created) or is down: retried by later Applies.
				delete(r.links, w.Dev)
				delete(r.mirror, k)
				st.Pending++
				continue
			}
			errs = append(errs, fmt.Errorf("replacing route %s: %w", w.Route, err))
			st.Failed++
			continue
		}
		r.mirror[k] = w
		st.Replaced++
	}
	return errs
}

// deleteUndesired removes our routes that are not desired.
func (r *Reconciler) deleteUndesired(want *wanted, st *Stats) []error {
	var errs []error
	for k, have := range r.mirror {
		if want.has(k) {
			continue
		}
		if err := r.h.DeleteRoute(have); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("deleting route %s: %w", have.Route, err))
			st.Failed++
			continue
		}
		delete(r.mirror, k)
		st.Deleted++
	}
	return errs
}

// same reports whether the kernel route have is exactly the desired w.
func same(have, w KernelRoute) bool {
	return have.Route == w.Route && have.LinkIndex == w.LinkIndex
}

func (r *Reconciler) logApply(st Stats, desired int) {
	ev := r.log.Debug()
	if st.Full || st.Replaced > 0 || st.Deleted > 0 || st.Failed > 0 {
		ev = r.log.Info()
	}
	ev.Bool("full", st.Full).Int("desired", desired).Int("replaced", st.Replaced).
		Int("deleted", st.Deleted).Int("pending", st.Pending).Int("failed", st.Failed).Int("refused", st.Refused).
		Dur("duration", st.Duration).Msg("Routes applied")
}
