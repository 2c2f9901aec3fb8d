#!/usr/bin/env bash
# Configures and builds stale into build/ (Release). Extra arguments go to cmake, e.g.
#   scripts/build.sh -DSTALE_CUDA=OFF
# CI sets STALE_WERROR=ON through the environment (unset: what the folder was configured with, else OFF); BUILD_TARGETS="a b" builds only those targets.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
mkdir -p "$BUILD_DIR"
# STALE_WERROR only when given: a build folder that test.sh configured with -Werror keeps it, so
# that main.sh or reproduce.sh after the tests do not rebuild everything with other flags
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release ${STALE_WERROR:+-DSTALE_WERROR="$STALE_WERROR"} "$@" >"$BUILD_DIR/configure.log" 2>&1 ||
  { cat "$BUILD_DIR/configure.log"; exit 1; }
grep -E "✓|✗" "$BUILD_DIR/configure.log" >&2 || true
# BUILD_TARGETS (space-separated) builds only those targets (the CI's sanitizer subset)
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j "$(nproc)" "${targets[@]}"
