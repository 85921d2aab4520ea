package datastore

import (
	"fmt"
	"net/netip"
	"strings"
)

// ID identifies a stored object by what its key names, in Project Calico's etcdv3 layout: a v3
// resource (ResourceID), an IPAM block (BlockID), a host's block affinity (AffinityID), an IPAM
// handle (HandleID) or the IPAM configuration (IPAMConfigID); UnknownKey is any other key.
// ParseKey is the one reader of the layout, Key its writer. IDs compare with ==.
type ID interface {
	// Key is the etcd key of the object.
	Key() string
}

// Key is the key of the object.
func (r ResourceID) Key() string { return ResourceKey(*r.Kind, r.Namespace, r.Name) }

// BlockID names an IPAM block.
type BlockID struct{ CIDR netip.Prefix }

// Key is the block's key.
func (b BlockID) Key() string { return BlockKey(b.CIDR.String()) }

// AffinityID names a host's affinity to a block.
type AffinityID struct {
	Host string
	CIDR netip.Prefix
}

// Key is the affinity's key.
func (a AffinityID) Key() string { return AffinityKey(a.Host, a.CIDR.String()) }

// HandleID names an IPAM handle.
type HandleID struct{ Handle string }

// Key is the handle's key.
func (h HandleID) Key() string { return HandleKey(h.Handle) }

// IPAMConfigID names the IPAM configuration (one key).
type IPAMConfigID struct{}

// Key is IPAMConfigKey.
func (IPAMConfigID) Key() string { return IPAMConfigKey }

// UnknownKey is a key outside the layouts calico-host reads: a kind it does not know, another
// tree, or a malformed key of a known layout (see ParseKey).
type UnknownKey string

// Key is the key itself.
func (u UnknownKey) Key() string { return string(u) }

// ParseKey is the ID that key names. A key outside the layouts calico-host reads is its
// UnknownKey; a key that has a known layout but names no object (an affinity or a block whose
// CIDR does not parse, an affinity whose CIDR is not canonical or not of the key's family) is its
// UnknownKey too, with an error saying why.
func ParseKey(key string) (ID, error) {
	switch {
	case strings.HasPrefix(key, ResourcePrefix):
		if id, ok := ParseResourceKey(key); ok {
			return id, nil
		}
	case strings.HasPrefix(key, BlockPrefix):
		if _, ok := ParseBlockKey(key); ok {
			return parseBlockID(key)
		}
	case strings.HasPrefix(key, HostPrefix):
		if host, _, ok := ParseAffinityKey(key); ok {
			p, err := AffinityBlock(key)
			if err != nil {
				return UnknownKey(key), err
			}
			return AffinityID{Host: host, CIDR: p}, nil
		}
	case strings.HasPrefix(key, HandlePrefix):
		if h := strings.TrimPrefix(key, HandlePrefix); h != "" && !strings.Contains(h, "/") {
			return HandleID{Handle: h}, nil
		}
	case key == IPAMConfigKey:
		return IPAMConfigID{}, nil
	}
	return UnknownKey(key), nil
}

// IDOf is ParseKey without the reason a malformed key names no object.
func IDOf(key string) ID {
	id, _ := ParseKey(key)
	return id
}

// parseBlockID reads a block key's CIDR, as the key writes it (a consumer takes the block's
// CIDR from its value).
func parseBlockID(key string) (ID, error) {
	s, _ := ParseBlockKey(key)
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return UnknownKey(key), fmt.Errorf("block key: bad block CIDR %q", s)
	}
	return BlockID{CIDR: p}, nil
}
