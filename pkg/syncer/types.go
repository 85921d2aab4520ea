package syncer

import "github.com/calico-host/calico-host/pkg/datastore"

// Status is the syncer's view of the datastore.
type Status int

// Statuses, in the order a healthy syncer goes through them.
const (
	WaitingForDatastore Status = iota // etcd unreachable (or not yet contacted); the consumer's model is as of the last message
	ResyncInProgress                  // listing
	InSync                            // the consumer has a snapshot, the changes up to etcd's revision when it was listed, and the watch is running
)

func (s Status) String() string {
	switch s {
	case WaitingForDatastore:
		return "WaitingForDatastore"
	case ResyncInProgress:
		return "ResyncInProgress"
	case InSync:
		return "InSync"
	}
	return "Unknown"
}

// Update is the new value of one key. ID is what the key names, parsed once by the syncer
// (datastore.ParseKey; a key outside Project Calico's layout is a datastore.UnknownKey). Value
// is what the syncer's decoder produced (by default datastore.DecodeID, so an api.Resource,
// *api.AllocationBlock, *api.BlockAffinity, *api.IPAMHandle or *api.IPAMConfig); nil means the
// key was deleted, or its value was undecodable or invalid (logged with the key) and is treated
// as absent. A deletion may name a key the consumer never had (for example one whose previous
// value was bad too): consumers ignore those. Each Value is freshly decoded and belongs to the
// consumer.
type Update struct {
	ID       datastore.ID
	Value    any
	Revision int64 // the key's mod revision (for a deletion, the revision of the delete)
}

// Message is one item of the stream.
type Message struct {
	// Status is the syncer's status after this message.
	Status Status
	// Snapshot means Updates is the complete state under the prefixes (nil values never appear in
	// a snapshot); consumers replace their model with it, diffing to find what went away. Its
	// Status is InSync when it was listed at etcd's current revision, else ResyncInProgress: the
	// updates that follow (with ResyncInProgress too) bring it up to that revision, and the
	// first message after them says InSync.
	Snapshot bool
	// Updates are the changes, in revision order per prefix (each prefix has its own watch, so
	// changes under different prefixes may interleave out of revision order; per key the order
	// always holds); empty for a pure status change.
	Updates []Update
	// Revision is the etcd revision the consumer is now at: for a snapshot, the revision it was
	// listed at; otherwise the highest revision delivered so far.
	Revision int64
}
