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

// ValidateWrite checks an object about to be written, with Project Calico's write-time rules
// too (see api.Validator.ValidateWrite).
func ValidateWrite(r api.Resource) error { return Validator.ValidateWrite(r) }
