package calicoctl

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// ensureInitialized does what Project Calico's calicoctl does before every apply, create and
// replace (libcalico-go's EnsureInitialized with no version or cluster type): it creates the
// ClusterInformation "default" (random clusterGUID, datastoreReady true) or fills in a missing
// clusterGUID or datastoreReady, and creates the tiers default, kube-admin and kube-baseline if
// they are missing. Like Project Calico it does not fail the command: a write the user may not
// be allowed to do here must not block the writes that were asked for.
func (s *session) ensureInitialized() {
	if err := s.ensureClusterInformation(); errors.Is(err, context.DeadlineExceeded) {
		return // etcd does not answer: the writes will say so
	}
	for _, t := range defaultTiers {
		tier := &api.Tier{ObjectMeta: api.ObjectMeta{Name: t.name},
			Spec: api.TierSpec{Order: api.Float(t.order), DefaultAction: t.action}}
		if err := s.create(tier); err != nil && !datastore.IsAlreadyExists(err) {
			return
		}
	}
}

func (s *session) ensureClusterInformation() error {
	for attempt := 1; attempt <= maxUpdateAttempts; attempt++ {
		ctx, cancel := s.op()
		ci, err := datastore.GetAs[*api.ClusterInformation](ctx, s.ds, "", "default")
		cancel()
		switch {
		case datastore.IsNotFound(err):
			ci = &api.ClusterInformation{ObjectMeta: api.ObjectMeta{Name: "default"},
				Spec: api.ClusterInformationSpec{ClusterGUID: newClusterGUID(), DatastoreReady: api.Bool(true)}}
			if err := s.create(ci); !datastore.IsAlreadyExists(err) {
				return err
			}
			continue
		case err != nil:
			return err
		}
		if ci.Spec.ClusterGUID != "" && ci.Spec.DatastoreReady != nil {
			return nil
		}
		if ci.Spec.ClusterGUID == "" {
			ci.Spec.ClusterGUID = newClusterGUID()
		}
		if ci.Spec.DatastoreReady == nil {
			ci.Spec.DatastoreReady = api.Bool(true)
		}
		if err := s.write(ci); !datastore.IsConflict(err) {
			return err
		}
		if err := s.backoff(attempt); err != nil {
			return err
		}
	}
	return fmt.Errorf("initializing ClusterInformation: too many conflicts")
}

// newClusterGUID is a random UUID as 32 hex digits, as Project Calico writes it.
func newClusterGUID() string {
	u := uuid.New()
	return hex.EncodeToString(u[:])
}
