package startup

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// defaultTiers are the tiers Project Calico creates: name, default action, order.
var defaultTiers = []struct {
	name, action string
	order        float64
}{
	{"default", "Deny", 1e6},
	{"kube-admin", "Pass", 1e3},
	{"kube-baseline", "Pass", 1e7},
}

// ensureClusterDefaults writes ClusterInformation, the tiers, FelixConfiguration default and
// node.<name>, BGPConfiguration and IPAMConfiguration default, as Project Calico does in etcd
// mode. Existing objects keep every value a user set; only missing fields are filled in.
func (s *Startup) ensureClusterDefaults(ctx context.Context) error {
	steps := []struct {
		what string
		fn   func(context.Context) error
	}{
		{"cluster information", s.ensureClusterInformation},
		{"tiers", s.ensureTiers},
		{"global felix configuration", s.ensureGlobalFelixConfig},
		{"node felix configuration", s.ensureNodeFelixConfig},
		{"BGP configuration", s.ensureBGPConfig},
		{"IPAM configuration", s.ensureIPAMConfig},
	}
	for _, st := range steps {
		if err := st.fn(ctx); err != nil {
			return fmt.Errorf("ensuring %s: %w", st.what, err)
		}
	}
	return nil
}

// ensure reads the object called name of type T; if it is missing it creates fresh() (with
// calicoctl's defaults); otherwise it applies fill and updates only if fill reports a change.
// Concurrent writers (other hosts starting) are handled by retrying.
func ensure[T api.Resource](ctx context.Context, s *Startup, name string, fresh func() T, fill func(T) bool) error {
	for attempt := 1; ; attempt++ {
		cur, err := datastore.GetAs[T](ctx, s.ds, "", name)
		switch {
		case datastore.IsNotFound(err):
			obj := fresh()
			api.SetDefaults(obj)
			_, err = s.ds.Create(ctx, obj)
			if err == nil {
				kind := obj.GetTypeMeta().Kind
				s.log.Info().Str("kind", kind).Str("name", name).Msg("Created default")
			}
		case err != nil:
			return err
		case fill != nil && fill(cur):
			_, err = s.ds.Update(ctx, cur)
			if err == nil {
				s.log.Info().Str("kind", cur.GetTypeMeta().Kind).Str("name", name).Msg("Filled in missing defaults")
			}
		default:
			return nil
		}
		if err == nil {
			return nil
		}
		retry := datastore.IsConflict(err) || datastore.IsAlreadyExists(err) || datastore.IsNotFound(err)
		if !retry || attempt >= maxWriteAttempts {
			return err
		}
	}
}

// ensureClusterInformation creates or completes ClusterInformation "default" as Project Calico's
// calico-node does, except for calicoVersion: Project Calico's calicoctl refuses to work when that
// differs from its own version, so we write it only when calico_version is configured and leave
// what a calico-node host wrote otherwise. Our own version goes on our Node (versionAnnotation).
func (s *Startup) ensureClusterInformation(ctx context.Context) error {
	return ensure(ctx, s, "default", func() *api.ClusterInformation {
		return &api.ClusterInformation{ObjectMeta: api.ObjectMeta{Name: "default"}, Spec: api.ClusterInformationSpec{
			ClusterGUID: newClusterGUID(), ClusterType: s.cfg.ClusterType, CalicoVersion: s.cfg.CalicoVersion,
			DatastoreReady: api.Bool(true),
		}}
	}, func(ci *api.ClusterInformation) bool {
		sp := &ci.Spec
		changed := false
		if s.cfg.CalicoVersion != "" && sp.CalicoVersion != s.cfg.CalicoVersion {
			sp.CalicoVersion, changed = s.cfg.CalicoVersion, true
		}
		if sp.ClusterGUID == "" {
			sp.ClusterGUID, changed = newClusterGUID(), true
		}
		if sp.DatastoreReady == nil { // an explicit false (an upgrade in progress) is left alone
			sp.DatastoreReady, changed = api.Bool(true), true
		}
		if merged := mergeClusterTypes(sp.ClusterType, s.cfg.ClusterType); merged != sp.ClusterType {
			sp.ClusterType, changed = merged, true
		}
		return changed
	})
}

func newClusterGUID() string {
	u := uuid.New()
	return hex.EncodeToString(u[:])
}

// openStackCluster reports whether this host's or the stored cluster type includes "openstack"
// (networking-calico appends it to ClusterInformation default).
func (s *Startup) openStackCluster(ctx context.Context) bool {
	types := s.cfg.ClusterType
	if ci, err := datastore.GetAs[*api.ClusterInformation](ctx, s.ds, "", "default"); err == nil {
		types += "," + ci.Spec.ClusterType
	}
	for _, t := range strings.Split(types, ",") {
		if strings.EqualFold(strings.TrimSpace(t), "openstack") {
			return true
		}
	}
	return false
}

// mergeClusterTypes adds the local cluster types to the stored comma-separated list.
func mergeClusterTypes(stored, local string) string {
	if local == "" {
		return stored
	}
	if stored == "" {
		return local
	}
	all := strings.Split(stored, ",")
	for _, t := range strings.Split(local, ",") {
		if !contains(all, t) {
			all = append(all, t)
		}
	}
	return strings.Join(all, ",")
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (s *Startup) ensureTiers(ctx context.Context) error {
	for _, t := range defaultTiers {
		err := ensure(ctx, s, t.name, func() *api.Tier {
			return &api.Tier{ObjectMeta: api.ObjectMeta{Name: t.name},
				Spec: api.TierSpec{Order: api.Float(t.order), DefaultAction: t.action}}
		}, nil)
		if err != nil {
			return fmt.Errorf("tier %s: %w", t.name, err)
		}
	}
	return nil
}

func (s *Startup) ensureGlobalFelixConfig(ctx context.Context) error {
	// Project Calico's calico-node writes reportingInterval 0 (no agent status). On OpenStack
	// Neutron binds ports only to hosts whose felix reports its status, so there the field is
	// left unset and felix's default (30 s) applies.
	var reporting *api.Duration
	if !s.openStackCluster(ctx) {
		reporting = api.Dur(0)
	}
	return ensure(ctx, s, "default", func() *api.FelixConfiguration {
		return &api.FelixConfiguration{ObjectMeta: api.ObjectMeta{Name: "default"}, Spec: api.FelixConfigurationSpec{
			ReportingInterval: reporting, LogSeverityScreen: "Info",
		}}
	}, func(fc *api.FelixConfiguration) bool {
		changed := false
		if fc.Spec.ReportingInterval == nil && reporting != nil {
			fc.Spec.ReportingInterval, changed = reporting, true
		}
		if fc.Spec.LogSeverityScreen == "" {
			fc.Spec.LogSeverityScreen, changed = "Info", true
		}
		return changed
	})
}

func (s *Startup) ensureNodeFelixConfig(ctx context.Context) error {
	name := "node." + s.name
	return ensure(ctx, s, name, func() *api.FelixConfiguration {
		return &api.FelixConfiguration{ObjectMeta: api.ObjectMeta{Name: name}, Spec: api.FelixConfigurationSpec{
			DefaultEndpointToHostAction: "Return",
		}}
	}, func(fc *api.FelixConfiguration) bool {
		if fc.Spec.DefaultEndpointToHostAction != "" {
			return false
		}
		fc.Spec.DefaultEndpointToHostAction = "Return"
		return true
	})
}

func (s *Startup) ensureBGPConfig(ctx context.Context) error {
	return ensure(ctx, s, "default", func() *api.BGPConfiguration {
		return &api.BGPConfiguration{ObjectMeta: api.ObjectMeta{Name: "default"},
			Spec: api.BGPConfigurationSpec{LogSeverityScreen: "Info"}}
	}, nil)
}

func (s *Startup) ensureIPAMConfig(ctx context.Context) error {
	return ensure(ctx, s, "default", func() *api.IPAMConfiguration {
		return &api.IPAMConfiguration{ObjectMeta: api.ObjectMeta{Name: "default"},
			Spec: api.IPAMConfigurationSpec{AutoAllocateBlocks: true, StrictAffinity: false,
				KubeVirtVMAddressPersistence: api.Str("Enabled")}} // as calico-node writes it (not calicoctl)
	}, nil)
}
