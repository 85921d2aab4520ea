package routes

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/felix/dataplane"
)

// Syncer is the dataplane's view of a Reconciler (dataplane.RouteSyncer): routes in the main
// table, scope 0 meaning "the kernel's default" (link for a device route without a gateway).
type Syncer struct {
	r         *Reconciler
	converted []Route // reused between Applies
}

var _ dataplane.RouteSyncer = (*Syncer)(nil)

// NewSyncer returns a Syncer over a new Reconciler.
func NewSyncer(h Handle, protocol int, log zerolog.Logger) *Syncer {
	return &Syncer{r: New(h, protocol, log)}
}

// Reconciler returns the underlying Reconciler (for Stats and InterfaceChanged).
func (s *Syncer) Reconciler() *Reconciler { return s.r }

// Apply implements dataplane.RouteSyncer.
func (s *Syncer) Apply(ctx context.Context, desired []dataplane.Route) error {
	s.converted = s.converted[:0]
	for _, d := range desired {
		s.converted = append(s.converted, Route{
			Dst:       d.Dst,
			Dev:       d.Dev,
			Gateway:   d.Gateway,
			Onlink:    d.Onlink,
			Blackhole: d.Blackhole,
			Scope:     scopeOf(d.Scope),
		})
	}
	_, err := s.r.Apply(ctx, s.converted)
	return err
}

// RequestResync implements dataplane.RouteSyncer.
func (s *Syncer) RequestResync() { s.r.RequestResync() }

// InterfaceChanged forwards to the Reconciler: call it for interface events so that a re-created
// device gets its routes back before the next resync.
func (s *Syncer) InterfaceChanged(name string) { s.r.InterfaceChanged(name) }

func scopeOf(s dataplane.RouteScope) Scope {
	switch s {
	case dataplane.ScopeLink:
		return ScopeLink
	case 254: // RT_SCOPE_HOST
		return ScopeHost
	case 200: // RT_SCOPE_SITE: not modelled; global is the closest
		return ScopeGlobal
	}
	return ScopeAuto
}
