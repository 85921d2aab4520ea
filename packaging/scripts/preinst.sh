#!/bin/sh
# Before an upgrade or reinstall: remember the mode and owner of the configuration files. rpm
# rewrites them for a %config(noreplace) file whose content the admin did not change (dpkg keeps
# them); the postinst puts them back ("maint restore-perms"), so an admin's stricter mode, for
# example chmod 0600 on datastore.toml, survives upgrades with either package manager.
set -e
case "${1:-}" in
  upgrade | install) [ -n "${2:-}" ] || exit 0 ;; # deb: "upgrade <old>", "install <old>" (reinstall)
  [0-9]*) [ "$1" -ge 2 ] || exit 0 ;;              # rpm: versions installed after the transaction
  *) exit 0 ;;
esac
dir=/run/calico-host-perms
mkdir -p "$dir"
chmod 0700 "$dir"
for f in /etc/calico/*.toml; do
  if [ -f "$f" ] && [ ! -L "$f" ]; then stat -c '%a %u %g' "$f" >"$dir/${f##*/}"; fi
done
exit 0
