#!/usr/bin/env bash
# Installs Debian packages that the tests need, once: does nothing when PROGRAM is already there.
# Used by .ci/run for Chromium (the dashboard's browser tests) and faketime (the wall-clock rows of
# scripts/clock-matrix.sh); apt-get runs as root, else through sudo.
#
# Usage: bash scripts/install-debian.sh PROGRAM PACKAGE [PACKAGE...]   e.g. /usr/bin/faketime faketime
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 PROGRAM PACKAGE [PACKAGE...]" >&2; exit 2; }
program=$1
shift
if [ -x "$program" ]; then
  echo "$(basename "$program") present: $program"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
[ -x "$program" ] || { echo "$* installed but $program is missing" >&2; exit 1; }
echo "installed $*: $program"
