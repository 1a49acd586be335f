#!/usr/bin/env bash
# Runs the whole test suite: the C core's tests and the Swift façade's, the latter against both
# registry backends (every façade test is parameterised over `.c` and `.swift`).
# Tests that read the process-wide registration count need a quiet process: no parallel tests.
# OBSERVECORE_INTERNAL_CHECKS=1 compiles the C core's consistency checks into this debug build.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
OBSERVECORE_INTERNAL_CHECKS=1 swift test --no-parallel "$@"
