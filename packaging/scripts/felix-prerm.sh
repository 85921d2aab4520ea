#!/bin/sh
set -e
exec /usr/lib/calico-host/maint prerm "$1" calico-felix.service
