package datastore

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/calico-host/calico-host/pkg/api"
)

// InvalidKV is a key whose value could not be decoded; listings report it and go on.
type InvalidKV struct {
	Key string
	Err error
}

// ListResult is the outcome of listing one kind.
type ListResult struct {
	Items    []api.Resource
	Revision int64
	Invalid  []InvalidKV
}

// Get reads one object.
func (c *Client) Get(ctx context.Context, k api.KindInfo, namespace, name string) (api.Resource, error) {
	key := ResourceKey(k, namespace, name)
	kv, err := c.GetKV(ctx, key)
	if err != nil {
		return nil, err
	}
	r, err := DecodeResource(key, kv.Value, kv.ModRevision)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return r, nil
}

// List reads every object of a kind (in one namespace, or all when namespace is "" or the kind is
// cluster-wide). Undecodable values are returned in Invalid and do not stop the listing.
func (c *Client) List(ctx context.Context, k api.KindInfo, namespace string) (*ListResult, error) {
	prefix := KindPrefix(k)
	if k.Namespaced && namespace != "" {
		prefix += namespace + "/"
	}
	kvs, rev, err := c.ListKV(ctx, prefix, 0)
	if err != nil {
		return nil, err
	}
	res := &ListResult{Revision: rev, Items: make([]api.Resource, 0, len(kvs))}
	for _, kv := range kvs {
		if _, ok := ParseResourceKey(kv.Key); !ok {
			continue
		}
		r, err := DecodeResource(kv.Key, kv.Value, kv.ModRevision)
		if err != nil {
			res.Invalid = append(res.Invalid, InvalidKV{Key: kv.Key, Err: err})
			continue
		}
		res.Items = append(res.Items, r)
	}
	return res, nil
}

// Create writes a new object, failing with AlreadyExists if it is present. It sets uid and
// creationTimestamp and returns the object with its resourceVersion.
func (c *Client) Create(ctx context.Context, r api.Resource) (api.Resource, error) {
	key, err := KeyOf(r)
	if err != nil {
		return nil, err
	}
	m := r.GetObjectMeta()
	m.UID = uuid.NewString()
	m.CreationTimestamp = c.now().UTC().Format(time.RFC3339)
	fillTypeMeta(r)
	value, err := EncodeResource(r)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", key, err)
	}
	rev, err := c.CreateKV(ctx, key, value)
	if err != nil {
		return nil, err
	}
	m.ResourceVersion = strconv.FormatInt(rev, 10)
	return r, nil
}

// Update replaces an existing object with a compare-and-swap. With a resourceVersion set, the
// stored object must still be at that revision (else a Conflict error); without one, the update
// applies to whatever is stored now. uid and creationTimestamp are kept from the stored object,
// and so is every stored JSON field our types do not know (see keepUnknownFields).
func (c *Client) Update(ctx context.Context, r api.Resource) (api.Resource, error) {
	key, err := KeyOf(r)
	if err != nil {
		return nil, err
	}
	cur, err := c.GetKV(ctx, key)
	if err != nil {
		return nil, err
	}
	m := r.GetObjectMeta()
	if err := checkRevision(m.ResourceVersion, cur.ModRevision, key); err != nil {
		return nil, err
	}
	if old, err := DecodeResource(key, cur.Value, cur.ModRevision); err == nil {
		om := old.GetObjectMeta()
		m.UID, m.CreationTimestamp = om.UID, om.CreationTimestamp
	}
	if m.UID == "" {
		m.UID = uuid.NewString()
	}
	fillTypeMeta(r)
	value, err := EncodeResource(r)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", key, err)
	}
	value = keepUnknownFields(cur.Value, value, reflect.TypeOf(r))
	rev, err := c.UpdateKV(ctx, key, value, cur.ModRevision)
	if err != nil {
		return nil, err
	}
	m.ResourceVersion = strconv.FormatInt(rev, 10)
	return r, nil
}

// Delete removes an object and returns what was stored. A non-zero revision must match the
// stored mod revision (else a Conflict error).
func (c *Client) Delete(ctx context.Context, k api.KindInfo, namespace, name string, revision int64) (api.Resource, error) {
	key := ResourceKey(k, namespace, name)
	cur, err := c.GetKV(ctx, key)
	if err != nil {
		return nil, err
	}
	if revision != 0 && revision != cur.ModRevision {
		return nil, newErr(Conflict, key)
	}
	if err := c.DeleteKV(ctx, key, cur.ModRevision); err != nil {
		return nil, err
	}
	old, err := DecodeResource(key, cur.Value, cur.ModRevision)
	if err != nil {
		return nil, nil // deleted garbage: nothing to return
	}
	return old, nil
}

func checkRevision(rv string, current int64, key string) error {
	if rv == "" {
		return nil
	}
	want, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return fmt.Errorf("%s: invalid resourceVersion %q", key, rv)
	}
	if want != current {
		return newErr(Conflict, key)
	}
	return nil
}

func fillTypeMeta(r api.Resource) {
	if k, ok := api.KindOf(r); ok {
		*r.GetTypeMeta() = api.TypeMeta{Kind: k.Kind, APIVersion: api.APIVersion}
	}
}

// Revision parses an object's resourceVersion (0 if unset or invalid).
func Revision(r api.Resource) int64 {
	n, _ := strconv.ParseInt(r.GetObjectMeta().ResourceVersion, 10, 64)
	return n
}
