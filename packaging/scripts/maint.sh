#!/bin/sh
# Shared maintainer-script actions of calico-host packages, installed by calico-common as
# /usr/lib/calico-host/maint and called from each daemon package's scripts:
#   maint postinst <deb-or-rpm-arg> <unit>...  group of $CALICO_CONFIG on first install;
#                                              daemon-reload; restart running units on upgrade
#   maint prerm    <deb-or-rpm-arg> <unit>...  stop and disable the units on removal (not upgrade)
#   maint postrm                               daemon-reload
#   maint restore-perms                        mode and owner saved by preinst.sh (upgrades)
# Nothing is ever enabled or started on install: the admin decides. Works without systemd.
set -e
action=$1; arg=${2:-}; [ $# -ge 2 ] && shift 2 || shift $#
have_systemd() { [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; }
# deb: "configure" without an old version on first install, "configure <old-version>" on upgrade
# (and reinstall); rpm: $1 = 1 on install, 2 on upgrade.
first_install() { { [ "$arg" = configure ] && [ -z "${DPKG_OLD_VERSION:-}" ]; } || [ "$arg" = 1 ]; }
upgrade() { { [ "$arg" = configure ] && [ -n "${DPKG_OLD_VERSION:-}" ]; } || [ "$arg" = 2 ]; }

# restore_perms puts back the mode and owner of the configuration files as preinst.sh recorded
# them before the upgrade (rpm resets them to the package's).
restore_perms() {
  dir=/run/calico-host-perms
  [ -d "$dir" ] || return 0
  for s in "$dir"/*.toml; do
    [ -f "$s" ] || continue
    f=/etc/calico/${s##*/}
    if [ -f "$f" ] && [ ! -L "$f" ] && read -r mode uid gid <"$s"; then
      chown "$uid:$gid" "$f" 2>/dev/null || true
      chmod "$mode" "$f" 2>/dev/null || true
    fi
    rm -f "$s"
  done
}

case "$action" in
  restore-perms)
    restore_perms
    ;;
  postinst)
    restore_perms
    # The calico group may read the package's configuration file ($CALICO_CONFIG): set on the
    # first install only, while the file has the package's root group. Upgrades keep the
    # owner, group and mode the admin chose.
    if first_install; then
      for f in ${CALICO_CONFIG:-}; do
        if [ -f "$f" ] && [ "$(stat -c %g "$f")" = 0 ]; then chgrp calico "$f" 2>/dev/null || true; fi
      done
    fi
    have_systemd || exit 0
    systemctl daemon-reload >/dev/null 2>&1 || true
    if upgrade; then
      for u in "$@"; do systemctl try-restart "$u" >/dev/null 2>&1 || true; done
    fi
    ;;
  prerm)
    case "$arg" in remove|purge|0) ;; *) exit 0 ;; esac
    have_systemd || exit 0
    for u in "$@"; do systemctl disable --now "$u" >/dev/null 2>&1 || true; done
    ;;
  postrm)
    have_systemd && systemctl daemon-reload >/dev/null 2>&1 || true
    ;;
esac
exit 0
