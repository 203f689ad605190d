#!/usr/bin/env bash
# Configures and builds ze-probe into ${ZP_BUILD_DIR:-build} (Ninja, RelWithDebInfo).
# Extra arguments go to cmake's configure step, e.g. -DZP_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
build=${ZP_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja "$@" >/dev/null
ninja -C "$build" -j "${ZP_JOBS:-$(nproc)}"
