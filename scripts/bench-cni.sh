#!/bin/sh
# ADD and DEL latency of the calico CNI plugin: 100 containers, one after another, through libcni,
# in network namespaces the benchmark creates (root only). Prints median, p99 and max in ms.
set -eu
cd "$(dirname "$0")/.."
export GOFLAGS="${GOFLAGS:--mod=mod}"
exec go test -run '^$' -bench 'BenchmarkCNIAddDel' -benchtime "${BENCHTIME:-1x}" -count "${COUNT:-1}" ./pkg/cni/
