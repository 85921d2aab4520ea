package calicoctl

import (
	"fmt"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

// identifier names an object as Project Calico's errors do: "IPPool(pool-1)",
// "NetworkPolicy(ns/name)".
func identifier(k api.KindInfo, namespace, name string) string {
	if k.Namespaced && namespace != "" {
		return fmt.Sprintf("%s(%s/%s)", k.Kind, namespace, name)
	}
	return fmt.Sprintf("%s(%s)", k.Kind, name)
}

// calicoError rewords a datastore error about one object the way Project Calico's calicoctl
// prints it ("resource does not exist: IPPool(x) with error: <nil>").
func calicoError(err error, k api.KindInfo, namespace, name string) error {
	id := identifier(k, namespace, name)
	switch {
	case err == nil:
		return nil
	case datastore.IsNotFound(err):
		return notExist(k.Kind, namespace, name)
	case datastore.IsAlreadyExists(err):
		return fmt.Errorf("resource already exists: %s with error: <nil>", id)
	case datastore.IsConflict(err):
		return fmt.Errorf("update conflict: %s", id)
	}
	return err
}

// notExist is Project Calico's ErrorResourceDoesNotExist.
func notExist(kind, namespace, name string) error {
	id := kind + "(" + name + ")"
	if namespace != "" {
		id = kind + "(" + namespace + "/" + name + ")"
	}
	return fmt.Errorf("resource does not exist: %s with error: <nil>", id)
}

// notSupported is Project Calico's ErrorOperationNotSupported message.
func notSupported(op, what, reason string) string {
	if reason == "" {
		return fmt.Sprintf("operation %s is not supported on %s", op, what)
	}
	return fmt.Sprintf("operation %s is not supported on %s: %s", op, what, reason)
}

// failf builds an error worded for the user as Project Calico words it (capitalised, sometimes
// ending with a full stop), which Go's error-string conventions would not allow.
func failf(format string, args ...any) error { return fmt.Errorf(format, args...) }
