package datastore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"strconv"

	"github.com/calico-host/calico-host/pkg/api"
)

// DecodeResource decodes a v3 resource value stored under key, setting its name and namespace from
// the key and its resourceVersion from the key's mod revision.
func DecodeResource(key string, value []byte, modRevision int64) (api.Resource, error) {
	id, ok := ParseResourceKey(key)
	if !ok {
		return nil, fmt.Errorf("not a v3 resource key")
	}
	return decodeResource(id, value, modRevision)
}

func decodeResource(id ResourceID, value []byte, modRevision int64) (api.Resource, error) {
	r := id.Kind.New()
	if err := json.Unmarshal(value, r); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", id.Kind.Kind, err)
	}
	tm := r.GetTypeMeta()
	if tm.Kind != "" && tm.Kind != id.Kind.Kind {
		return nil, fmt.Errorf("value has kind %q, key is for %s", tm.Kind, id.Kind.Kind)
	}
	*tm = api.TypeMeta{Kind: id.Kind.Kind, APIVersion: api.APIVersion}
	m := r.GetObjectMeta()
	m.Name, m.Namespace = id.Name, id.Namespace
	m.ResourceVersion = strconv.FormatInt(modRevision, 10)
	if isPolicy(r) {
		delete(m.Annotations, api.AnnotationMetadata)
		if len(m.Annotations) == 0 {
			m.Annotations = nil
		}
	}
	return r, nil
}

// EncodeResource renders an object as the compact JSON stored in etcd (without resourceVersion).
// A policy carries its name in the projectcalico.org/metadata annotation, as Project Calico's
// etcd backend writes it on every write and removes it on every read.
func EncodeResource(r api.Resource) ([]byte, error) {
	m := r.GetObjectMeta()
	saved := *m
	defer func() { *m = saved }()
	m.ResourceVersion = ""
	if isPolicy(r) {
		m.Annotations = maps.Clone(m.Annotations)
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		name, _ := json.Marshal(map[string]string{"name": m.Name})
		m.Annotations[api.AnnotationMetadata] = string(name)
	}
	return json.Marshal(r)
}

// isPolicy reports whether r is one of the kinds whose stored form carries the metadata
// annotation: (staged) network policies and global network policies.
func isPolicy(r api.Resource) bool {
	_, ok := r.(interface{ View() api.PolicySpecView })
	return ok
}

// Decode decodes the value stored under key (see DecodeID); a key of a known layout that names
// no object (see ParseKey) is an error.
func Decode(key string, value []byte, modRevision int64) (any, error) {
	id, err := ParseKey(key)
	if err != nil {
		return nil, err
	}
	return DecodeID(id, value, modRevision)
}

// DecodeID decodes any value calico-host understands, by what its key names: v3 resources
// (api.Resource), IPAM blocks (*api.AllocationBlock), affinities (*api.BlockAffinity), handles
// (*api.IPAMHandle) and the IPAM config (*api.IPAMConfig). An UnknownKey gives (nil, nil).
func DecodeID(id ID, value []byte, modRevision int64) (any, error) {
	var v any
	switch id := id.(type) {
	case ResourceID:
		return decodeResource(id, value, modRevision)
	case BlockID:
		v = &api.AllocationBlock{}
	case AffinityID:
		return decodeAffinity(value)
	case HandleID:
		v = &api.IPAMHandle{}
	case IPAMConfigID:
		v = &api.IPAMConfig{}
	default:
		return nil, nil
	}
	if err := strictJSON(value, v); err != nil {
		return nil, err
	}
	return v, nil
}

// decodeAffinity decodes a block affinity (its key names a block by its canonical CIDR, see
// ParseKey): its state must be one Project Calico writes.
func decodeAffinity(value []byte) (*api.BlockAffinity, error) {
	a := &api.BlockAffinity{}
	if err := strictJSON(value, a); err != nil {
		return nil, err
	}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("decoding affinity: %w", err)
	}
	return a, nil
}

// strictJSON decodes exactly one JSON value of v's type: anything after it is an error.
func strictJSON(value []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(value))
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("decoding %T: %w", v, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return fmt.Errorf("decoding %T: data after the JSON value", v)
	}
	return nil
}
