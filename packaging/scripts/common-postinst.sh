#!/bin/sh
# calico-common: the calico group may read the configuration (it can hold etcd credentials).
set -e
if ! getent group calico >/dev/null 2>&1; then
  if command -v addgroup >/dev/null 2>&1; then
    addgroup --system --quiet calico
  else
    groupadd -r calico
  fi
fi
chgrp calico /etc/calico/datastore.toml 2>/dev/null || true
chmod 0640 /etc/calico/datastore.toml 2>/dev/null || true
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
