// Package report keeps the current findings of a daemon's settings that calico-host does not
// implement (see compat): it logs each once and keeps a Prometheus gauge of them. It is apart from
// compat so that the CNI plugin, which checks its network configuration with compat once per
// call, does not link Prometheus.
//
// One file, report.go: Reporter (New, Replace with the current findings, Collector for the
// calico_host_unimplemented_settings gauge).
package report
