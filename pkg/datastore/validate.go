package datastore

import (
	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/selector"
)

// Validator checks v3 objects with the full selector language.
var Validator = api.Validator{CheckSelector: func(s string) error {
	_, err := selector.Parse(s)
	return err
}}

// Validate checks one object (see api.Validator).
func Validate(r api.Resource) error { return Validator.Validate(r) }
