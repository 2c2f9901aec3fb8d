#!/usr/bin/env bash
# Configures and builds stale into build/ (Release). Extra arguments go to cmake, e.g.
#   scripts/build.sh -DSTALE_CUDA=OFF
# CI sets STALE_WERROR=ON through the environment; BUILD_TARGETS="a b" builds only those targets.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
mkdir -p "$BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSTALE_WERROR="${STALE_WERROR:-OFF}" "$@" >"$BUILD_DIR/configure.log" 2>&1 ||
  { cat "$BUILD_DIR/configure.log"; exit 1; }
grep -E "✓|✗" "$BUILD_DIR/configure.log" >&2 || true
# BUILD_TARGETS (space-separated) builds only those targets (the CI's sanitizer subset)
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j "$(nproc)" "${targets[@]}"
