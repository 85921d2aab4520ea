#!/bin/sh
set -e
[ -x /usr/lib/calico-host/maint ] && exec /usr/lib/calico-host/maint postrm
exit 0
