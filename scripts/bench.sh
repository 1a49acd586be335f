#!/usr/bin/env bash
# Builds observe-bench in release mode and runs it; arguments go to observe-bench
# (try --help). Without arguments it runs the default suite (about a minute on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
swift run -c release observe-bench "$@"
