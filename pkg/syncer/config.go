package syncer

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// Decoder turns one stored value into what consumers receive in Update.Value, by what its key
// names. An error means the value is bad: the syncer logs it with the key and treats the key as
// absent. Returning (nil, nil) also means absent (for example a datastore.UnknownKey).
type Decoder func(id datastore.ID, value []byte, modRevision int64) (any, error)

// Config says what to sync and how. Decoder and Filter are called from several goroutines at once
// while a snapshot is listed, so they must be safe for concurrent use.
type Config struct {
	// Prefixes are the key prefixes to sync (e.g. datastore.ResourcePrefix, datastore.BlockPrefix).
	// At least one is required. A prefix that lies inside another one is dropped.
	Prefixes []string
	// Decoder decodes values; default DefaultDecoder.
	Decoder Decoder
	// Filter, if set, returns true for the keys the syncer must IGNORE entirely (never decoded,
	// never delivered; for example other hosts' block affinities). Keys for which it returns false
	// are synced.
	Filter func(id datastore.ID) bool
	// PageSize is the number of keys per list request; default 500.
	PageSize int64
	// MinBackoff and MaxBackoff bound the exponential retry delay; defaults 100ms and 5s.
	MinBackoff, MaxBackoff time.Duration
	// WatchTimeout: if nothing (no event, no progress notification) arrives on the watch for this
	// long although etcd is past the watch's start, the watch is stuck: the syncer restarts it from
	// the revision the consumer has. Progress is requested from etcd after a third of it without
	// traffic. Default 60s.
	WatchTimeout time.Duration
	// LivenessTimeout is how long etcd may go without a sign of life before the syncer reports
	// WaitingForDatastore (the consumer keeps its model; the watch resumes from its revision once
	// etcd answers again). Signs of life are watch traffic and answers to a cheap probe (a
	// serializable single-key read) sent after half of it without traffic; a gRPC connection that
	// stays down for a quarter of it counts as a loss at once. Default 4s.
	LivenessTimeout time.Duration
	// RequestTimeout bounds each list page and each probe request; default 10s.
	RequestTimeout time.Duration
	// ListQuantum makes syncers that list at about the same time list at the same revision: a
	// list is pinned to etcd's current revision rounded down to a multiple of ListQuantum (never
	// before the consumer's own revision; at the current revision when the rounded one is
	// compacted), and its pages are serializable reads. An etcd grpc-proxy answers serializable
	// reads pinned to a revision from its cache, so a fleet's hosts behind one proxy that list
	// within the same window of ListQuantum revisions cost etcd one list, not one per host. The
	// watch starts after the list revision, so the consumer sees the changes since then as
	// events (at most ListQuantum-1 of them). Default 128; 1 lists at the current revision.
	ListQuantum int64
	// ResyncSpread spreads re-lists: a syncer that lost its history (compaction) waits a random
	// time up to ResyncSpread before it lists again, so that a fleet does not re-list at once.
	// The first list is not delayed. Default 2s; negative: no delay.
	ResyncSpread time.Duration
}

// Defaults.
const (
	DefaultPageSize        = 500
	DefaultMinBackoff      = 100 * time.Millisecond
	DefaultMaxBackoff      = 5 * time.Second
	DefaultWatchTimeout    = 60 * time.Second
	DefaultLivenessTimeout = 4 * time.Second
	DefaultRequestTimeout  = 10 * time.Second
	DefaultListQuantum     = 128
	DefaultResyncSpread    = 2 * time.Second
)

// DefaultDecoder is datastore.DecodeID followed, for v3 resources, by api.SetReadDefaults and
// datastore.Validate: a resource that does not validate is bad input, treated as absent.
// Read defaults are applied first because objects written by other tools (older Project Calico
// releases, networking-calico) may lack fields that calicoctl fills in today, such as an IPPool's
// assignmentMode; those objects are valid. They never change meaning: a policy without types
// keeps none (it applies to both directions).
func DefaultDecoder(id datastore.ID, value []byte, modRevision int64) (any, error) {
	v, err := datastore.DecodeID(id, value, modRevision)
	if err != nil {
		return nil, err
	}
	if r, ok := v.(api.Resource); ok {
		api.SetReadDefaults(r)
		if err := datastore.Validate(r); err != nil {
			return nil, fmt.Errorf("invalid %s: %w", r.GetTypeMeta().Kind, err)
		}
	}
	return v, nil
}

// Invalid is the value of a key whose object is stored but not valid, for consumers that must
// not treat it as absent: FailClosedDecoder delivers it for the kinds whose absence could widen
// what is allowed, calico-confd's decoder for the BGP objects whose absence would change its
// sessions. Value is the decoded resource (read defaults applied), or nil when the value did not
// decode; Err says why it is invalid (the key is the Update's). Consumers must not enforce Value
// as written: they use only what they can check and fail closed on the rest.
type Invalid struct {
	Value api.Resource
	Err   error
	// LeftOut are the paths (as "spec.ingress[1].destination.ports[0]") of the values that did
	// not decode and are missing from Value (see FailClosedDecoder).
	LeftOut []string
}

// Undecoded reports whether the value at one of paths ("spec.selector"), a value inside it or
// the value holding it did not decode: Value has it zero or partial. False for a nil Invalid.
func (i *Invalid) Undecoded(paths ...string) bool {
	if i == nil {
		return false
	}
	for _, l := range i.LeftOut {
		for _, p := range paths {
			if within(l, p) || within(p, l) {
				return true
			}
		}
	}
	return false
}

// within reports whether path a is path b or inside it.
func within(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+".") || strings.HasPrefix(a, b+"[")
}

// FailClosedDecoder is DefaultDecoder, except that a resource of a kind whose absence could
// widen what is allowed comes back as an *Invalid (not as absent) when it decodes but fails
// validation, so that the consumer can use what it can check and fail closed on the rest:
// policies and tiers (their deny rules would vanish), profiles (an endpoint would fall through
// to its next profile), network sets (a deny rule selecting the set would match nothing), host
// endpoints (the interface would be unprotected), IP pools (traffic to the pool would be
// masqueraded, its routes unencapsulated) and Nodes (this host's labels select its
// configuration). A FelixConfiguration comes back as an *Invalid without the fields that are
// invalid on their own (see validFelixFields). Other kinds are absent when invalid, as with
// DefaultDecoder.
//
// A resource whose value is a JSON object but does not decode as its kind (a field of the wrong
// JSON type, written by etcdctl or another tool) is treated as invalid, not absent: the values
// that do not decode are left out (see Invalid.LeftOut), the rest is decoded, and it comes back
// as above. A value that is not a JSON object is absent.
func FailClosedDecoder(id datastore.ID, value []byte, modRevision int64) (any, error) {
	v, err := datastore.DecodeID(id, value, modRevision)
	if err != nil {
		return decodeUndecodable(id, value, modRevision, err)
	}
	r, ok := v.(api.Resource)
	if !ok {
		return v, nil
	}
	api.SetReadDefaults(r)
	if err := datastore.Validate(r); err != nil {
		err = fmt.Errorf("invalid %s: %w", r.GetTypeMeta().Kind, err)
		if fc, ok := r.(*api.FelixConfiguration); ok {
			return validFelixFields(fc, err)
		}
		if failsClosed(r) {
			return &Invalid{Value: r, Err: err}, nil
		}
		return nil, err
	}
	return v, nil
}

// decodeUndecodable is FailClosedDecoder for a value that did not decode (err): a resource is
// decoded without the values that do not decode, as an *Invalid for the kinds that fail closed
// (a FelixConfiguration also without the fields invalid on their own); anything else is absent.
func decodeUndecodable(id datastore.ID, value []byte, modRevision int64, err error) (any, error) {
	rid, ok := id.(datastore.ResourceID)
	if !ok {
		return nil, err
	}
	r, leftOut, lerr := decodeLeniently(rid, value, modRevision)
	if lerr != nil {
		return nil, err
	}
	api.SetReadDefaults(r)
	err = leftOutErr(rid.Kind.Kind, leftOut, err)
	if fc, ok := r.(*api.FelixConfiguration); ok {
		v, ferr := validFelixFields(fc, err)
		if inv, ok := v.(*Invalid); ok {
			inv.LeftOut = leftOut
		}
		return v, ferr
	}
	if !failsClosed(r) {
		return nil, err
	}
	return &Invalid{Value: r, Err: err, LeftOut: leftOut}, nil
}

// validFelixFields is an invalid FelixConfiguration without the fields that are invalid on their
// own, as an *Invalid (Project Calico's felix reads its configuration field by field: one bad
// field does not reset the others to their defaults), or absent when what is left is still
// invalid (fields that conflict).
func validFelixFields(fc *api.FelixConfiguration, err error) (any, error) {
	datastore.Validator.DropInvalidFelixFields(fc)
	if datastore.Validator.ValidateFelixSpec(fc) != nil {
		return nil, err
	}
	return &Invalid{Value: fc, Err: err}, nil
}

// failsClosed reports whether an invalid r is delivered as *Invalid by FailClosedDecoder.
func failsClosed(r api.Resource) bool {
	switch r.(type) {
	case *api.GlobalNetworkPolicy, *api.NetworkPolicy, *api.Tier, *api.Profile, *api.GlobalNetworkSet,
		*api.NetworkSet, *api.HostEndpoint, *api.IPPool, *api.Node:
		return true
	}
	return false
}

// withDefaults fills in zero fields and normalises the prefixes.
func (c Config) withDefaults() Config {
	if c.Decoder == nil {
		c.Decoder = DefaultDecoder
	}
	if c.PageSize <= 0 {
		c.PageSize = DefaultPageSize
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	c.MaxBackoff = max(c.MaxBackoff, c.MinBackoff)
	if c.WatchTimeout <= 0 {
		c.WatchTimeout = DefaultWatchTimeout
	}
	if c.LivenessTimeout <= 0 {
		c.LivenessTimeout = DefaultLivenessTimeout
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.ListQuantum <= 0 {
		c.ListQuantum = DefaultListQuantum
	}
	if c.ResyncSpread == 0 {
		c.ResyncSpread = DefaultResyncSpread
	}
	c.Prefixes = normalizePrefixes(c.Prefixes)
	return c
}

// normalizePrefixes sorts the prefixes and drops duplicates and prefixes covered by another one,
// so that every key belongs to exactly one watch.
func normalizePrefixes(in []string) []string {
	sorted := append([]string(nil), in...)
	sort.Strings(sorted)
	var out []string
	for _, p := range sorted {
		if len(out) > 0 && strings.HasPrefix(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// ignored reports whether the filter excludes id.
func (c *Config) ignored(id datastore.ID) bool { return c.Filter != nil && c.Filter(id) }
