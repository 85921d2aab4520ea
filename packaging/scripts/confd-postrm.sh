#!/bin/sh
# calico-confd postrm: purge removes the BIRD configuration confd rendered (BIRD itself belongs
# to the bird2 package and is left alone).
set -e
if [ "$1" = purge ]; then
  rm -rf /etc/calico/confd/config/.staging
  rm -f /etc/calico/confd/config/bird*.cfg
  rmdir /etc/calico/confd/config 2>/dev/null || true
fi
[ -x /usr/lib/calico-host/maint ] && /usr/lib/calico-host/maint postrm
exit 0
