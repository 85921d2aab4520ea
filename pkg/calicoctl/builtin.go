package calicoctl

import (
	"fmt"

	"github.com/calico-host/calico-host/pkg/api"
)

// Project Calico's client serves the built-in profile projectcalico-default-allow (see
// api.DefaultAllowProfile) without storing it: Get returns it whatever etcd holds, a listing of
// profiles ends with it, and create, update and delete are refused with the errors below. Every
// command that reads or writes an object goes through these checks, so get, apply, create,
// replace, delete, label and patch behave as Project Calico's calicoctl does.

// isBuiltin reports whether kind and name are the built-in profile.
func isBuiltin(k api.KindInfo, name string) bool {
	return k.Kind == "Profile" && api.IsDefaultAllowProfile(name)
}

func isBuiltinResource(r api.Resource) bool {
	k, _ := api.KindOf(r)
	return isBuiltin(k, r.GetObjectMeta().Name)
}

// builtinExistsError is Project Calico's ErrorResourceAlreadyExists for a create of the profile.
type builtinExistsError struct{}

func (builtinExistsError) Error() string {
	name := api.DefaultAllowProfileName
	return fmt.Sprintf("resource already exists: %s with error: %s already exists. The profile %q is default provided by Calico", name, name, name)
}

// builtinNotSupported is Project Calico's ErrorOperationNotSupported for an update ("Update",
// "updated") or delete ("Delete", "deleted") of the profile.
func builtinNotSupported(op, past string) error {
	name := api.DefaultAllowProfileName
	return fmt.Errorf("%s", notSupported(op, name, fmt.Sprintf("The profile %q is a default provided by Calico and cannot be %s", name, past)))
}

var (
	errBuiltinUpdate = builtinNotSupported("Update", "updated")
	errBuiltinDelete = builtinNotSupported("Delete", "deleted")
)

// withBuiltin appends the built-in profile to a listing of profiles, as Project Calico's client
// does (after whatever etcd holds).
func withBuiltin(k api.KindInfo, items []api.Resource) []api.Resource {
	if k.Kind != "Profile" {
		return items
	}
	return append(items, api.DefaultAllowProfile())
}
