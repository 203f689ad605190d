#!/usr/bin/env bash
# Configures and builds ze-probe into ${ZP_BUILD_DIR:-build} (Ninja, RelWithDebInfo).
# Extra arguments go to cmake's configure step, e.g. -DZP_SANITIZE=ON. ZP_BUILD_TARGETS (ninja
# targets, space-separated) builds only those, e.g. ZP_BUILD_TARGETS=tests/probe/all.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
build=${ZP_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja "$@" >/dev/null
read -r -a targets <<<"${ZP_BUILD_TARGETS:-}"
ninja -C "$build" -j "${ZP_JOBS:-$(nproc)}" "${targets[@]}"
