package datastore

import (
	"context"
	"fmt"

	"github.com/calico-host/calico-host/pkg/api"
)

func kindOf[T api.Resource]() api.KindInfo {
	var zero T
	k, ok := api.KindOf(zero)
	if !ok {
		panic(fmt.Sprintf("datastore: %T is not a registered kind", zero))
	}
	return k
}

// GetAs reads one object of type T (e.g. *api.IPPool).
func GetAs[T api.Resource](ctx context.Context, c *Client, namespace, name string) (T, error) {
	r, err := c.Get(ctx, kindOf[T](), namespace, name)
	if err != nil {
		var zero T
		return zero, err
	}
	return r.(T), nil
}

// ListAs lists every object of type T (all namespaces when namespace is ""), skipping undecodable
// values, and returns the revision of the listing.
func ListAs[T api.Resource](ctx context.Context, c *Client, namespace string) ([]T, int64, error) {
	res, err := c.List(ctx, kindOf[T](), namespace)
	if err != nil {
		return nil, 0, err
	}
	out := make([]T, 0, len(res.Items))
	for _, r := range res.Items {
		out = append(out, r.(T))
	}
	return out, res.Revision, nil
}
