// Package config is calico-felix's configuration: Project Calico's parameter names, types and
// defaults, the sources they come from and their precedence. One table (Params) gives each
// parameter's name, Go type, default, legal values and whether a change applies live or needs a
// restart; it drives parsing, --help, the default felix.toml and the compatibility table
// (docs/compatibility.md). Each value is parsed once, here, into the Go type its consumers use:
// calc (RouteSource) and the dataplane (dataplane.NewConfig) take the values as they are, never
// parsing or defaulting them again. Datastore values arrive as the typed fields calc decoded,
// never as text.
//
// Precedence, highest first: environment FELIX_<PARAM> (case-insensitive), the config file
// (/etc/calico/felix.toml), the datastore (FelixConfiguration node.<host> over the
// selector-scoped one whose nodeSelector matches this host's Node over default, field by field),
// then the defaults. Local-only parameters (datastore connection, hostname) are ignored when they
// come from the datastore. A value that does not parse is logged with its source and ignored, so
// the next source down (in the end the default) applies.
//
// Files:
//   - params.go: the parameter table (Param, Params, Lookup).
//   - choices.go: the legal values of the enum parameters and their Go values.
//   - parse.go: text to typed values (Param.Parse), failsafe port lists.
//   - tables.go: route table ranges and the WireGuard tables allocated from them.
//   - spec.go: FelixConfiguration's typed fields to typed values (SpecLayer, Param.Convert).
//   - compat.go: Project Calico's parameters calico-host does not implement (compat's list).
//   - config.go: Config, the layers and their resolution (Resolve, Changed, Defaults).
//   - derived.go: values derived from several parameters (OpenStack, VXLANOn, VXLANMAC).
//   - local.go: the environment, felix.toml and the datastore connection (LoadLocal).
//   - docs.go: felix.toml, --help and the parameter table as text.
package config
