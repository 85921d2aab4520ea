#!/bin/sh
# Shared maintainer-script actions of calico-host packages, installed by calico-common as
# /usr/lib/calico-host/maint and called from each daemon package's scripts:
#   maint postinst <deb-or-rpm-arg> <unit>...  daemon-reload; restart running units on upgrade
#   maint prerm    <deb-or-rpm-arg> <unit>...  stop and disable the units on removal (not upgrade)
#   maint postrm                               daemon-reload
# Nothing is ever enabled or started on install: the admin decides. Works without systemd.
set -e
action=$1; arg=${2:-}; [ $# -ge 2 ] && shift 2 || shift $#
have_systemd() { [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; }

case "$action" in
  postinst)
    for f in /etc/calico/*.toml; do
      [ -e "$f" ] && chgrp calico "$f" 2>/dev/null || true
    done
    have_systemd || exit 0
    systemctl daemon-reload >/dev/null 2>&1 || true
    # deb: "configure <old-version>" on upgrade; rpm: $1 = 2 on upgrade.
    if { [ "$arg" = configure ] && [ -n "${DPKG_OLD_VERSION:-}" ]; } || [ "$arg" = 2 ]; then
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
