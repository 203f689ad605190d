#!/usr/bin/env bash
# Builds ze-probe and runs the main job: the six_local cases on the best device present.
# Arguments after the script name go to ze-probe (e.g. --route-pattern all).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build=${ZP_BUILD_DIR:-build}
if [[ $# -eq 0 ]]; then set -- --route-pattern six_local; fi
exec "$build/tools/ze-probe/ze-probe" "$@"
