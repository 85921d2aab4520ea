#!/bin/sh
# ADD and DEL latency of the calico CNI plugin: CONTAINERS containers (default 100), one after
# another, through libcni, in network namespaces the benchmark creates (root only). Prints median,
# p99 and max in ms. REFERENCE_DIR=<dir>[:<dir>...], each dir holding another build of calico and
# calico-ipam (Project Calico's, an older one of ours), runs the same ADDs and DELs with each
# against the same etcd, taking turns container by container, and prints their latencies and the
# ratios of the medians.
set -eu
cd "$(dirname "$0")/.."
export GOFLAGS="${GOFLAGS:--mod=mod}"
export CNI_BENCH_CONTAINERS="${CONTAINERS:-100}" CNI_BENCH_REFERENCE_DIR="${REFERENCE_DIR:-}"
exec go test -run '^$' -bench 'BenchmarkCNIAddDel' -benchtime "${BENCHTIME:-1x}" -count "${COUNT:-1}" ./pkg/cni/
