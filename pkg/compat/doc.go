// Package compat is the one list of Project Calico settings that calico-host accepts but does not
// implement (notimplemented.toml, data rather than code), and the means to report them: checks of
// felix parameter values, of datastore objects and of CNI network configurations against the
// list; the subpackage report logs each setting once and keeps a gauge of them, and the
// subpackage snapshot reads, for tests, the snapshot of Project Calico's settings (testdata).
// The list is parsed a kind at a time, on first use (parts.go), so a process that checks one
// kind parses that kind.
//
// A setting is reported when it is set to a value other than those calico-host handles as
// Project Calico does (its default among them): a default never warns. Settings that calico-host
// refuses instead (api.Unsupported, the CNI plugin's ParseNetConf) are not on the list.
//
// compat imports nothing of calico-host's, so that every component and calicoctl can use it.
//
// The files:
//
//	notimplemented.toml  the list: per kind, each setting, the values handled, and why
//	differences/*.md     each component's behaviour differences, for docs/compatibility.md
//	list.go              Setting, the kinds, Settings and FelixParam: the list as Go values
//	parts.go             parsing the list one kind at a time, on first use
//	value.go             value types and how values compare (durations, lists, key=value sets)
//	check.go             Finding, Check and CheckJSON: an object's fields against the list
package compat
