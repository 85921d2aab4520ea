#!/bin/sh
set -e
DPKG_OLD_VERSION=${2:-} CALICO_CONFIG=/etc/calico/felix.toml exec /usr/lib/calico-host/maint postinst "$1" calico-felix.service
