#!/bin/sh
# calico-startup postrm: purge removes the node name file it wrote (the Node object in etcd is
# the cluster's: delete it with calicoctl delete node).
set -e
if [ "$1" = purge ]; then
  rm -f /var/lib/calico/nodename
fi
[ -x /usr/lib/calico-host/maint ] && /usr/lib/calico-host/maint postrm
exit 0
