#!/usr/bin/env bash
# Installs what ObserveCore needs beyond the Swift toolchain, only when it is missing:
#   libbsd-dev  — arc4random_buf, which seeds the C registry's hash per process.
# Safe to run repeatedly; a no-op on a machine that has everything.
set -euo pipefail

missing=()
dpkg -s libbsd-dev >/dev/null 2>&1 || missing+=(libbsd-dev)

if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: installing ${missing[*]}" >&2
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
