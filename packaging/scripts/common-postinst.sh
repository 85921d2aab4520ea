#!/bin/sh
# calico-common: the calico group may read the configuration (it can hold etcd credentials).
# Owner, group and mode are set on the first install only (deb: "configure" without an old
# version; rpm: $1 = 1), and only while the file still has the package's root group: an
# upgrade or reinstall keeps whatever the admin chose (for example mode 0600).
set -e
if ! getent group calico >/dev/null 2>&1; then
  if command -v addgroup >/dev/null 2>&1; then
    addgroup --system --quiet calico
  else
    groupadd -r calico
  fi
fi
first_install() { { [ "${1:-}" = configure ] && [ -z "${2:-}" ]; } || [ "${1:-}" = 1 ]; }
f=/etc/calico/datastore.toml
if first_install "$@" && [ -f "$f" ] && [ "$(stat -c %g "$f")" = 0 ]; then
  chgrp calico "$f" 2>/dev/null || true
fi
# An upgrade keeps the mode and owner the admin gave the configuration files (rpm resets them).
/usr/lib/calico-host/maint restore-perms
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
