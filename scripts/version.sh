#!/bin/sh
# Prints the package version derived from git describe (see Makefile).
cd "$(dirname "$0")/.." || exit 1
if d=$(git describe --tags --match 'v[0-9]*' 2>/dev/null); then
  echo "$d" | sed -e 's/^v//' -e 's/-\([0-9]*\)-g/+\1.g/'
else
  echo "0.1.0+git$(git rev-list --count HEAD 2>/dev/null || echo 0).$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
fi
