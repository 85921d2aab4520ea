package datastore

import (
	"errors"
	"fmt"
)

// Reason classifies datastore errors callers act on.
type Reason int

// Reasons.
const (
	NotFound Reason = iota + 1
	AlreadyExists
	Conflict
)

func (r Reason) String() string {
	switch r {
	case NotFound:
		return "not found"
	case AlreadyExists:
		return "already exists"
	case Conflict:
		return "update conflict: the object was modified (resourceVersion does not match)"
	}
	return "unknown"
}

// Error is a datastore error about one key.
type Error struct {
	Reason Reason
	Key    string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Key, e.Reason) }

func newErr(r Reason, key string) error { return &Error{Reason: r, Key: key} }

func hasReason(err error, r Reason) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason == r
}

// IsNotFound reports whether err says the key does not exist.
func IsNotFound(err error) bool { return hasReason(err, NotFound) }

// IsAlreadyExists reports whether err says a create found the key present.
func IsAlreadyExists(err error) bool { return hasReason(err, AlreadyExists) }

// IsConflict reports whether err is a failed compare-and-swap.
func IsConflict(err error) bool { return hasReason(err, Conflict) }
