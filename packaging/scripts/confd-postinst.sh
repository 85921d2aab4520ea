#!/bin/sh
set -e
DPKG_OLD_VERSION=${2:-} exec /usr/lib/calico-host/maint postinst "$1" calico-confd.service calico-bird.service
