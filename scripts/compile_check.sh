#!/usr/bin/env bash
# Compiles the project for another instruction-set target with warnings as errors, without
# running anything: CI's guard against a build that breaks only on a CPU it does not have (an
# AVX-512 machine's Eigen paths, say). A binary for x86-64-v4 cannot run on a CPU without
# AVX-512; it only has to compile and link here.
#
#   bash scripts/compile_check.sh x86-64-v4      # AVX-512 (Intel Xeon, AMD Zen 4)
#   bash scripts/compile_check.sh x86-64         # generic x86-64 (SSE2)
#
# Builds the libraries, the CLI and every test suite (not the benchmarks or CUDA: their code is
# the same on every target) in build-check-TARGET/; about 4 minutes from cold on 2 cores
# (results/PERFORMANCE.md), incremental when the folder is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: compile_check.sh TARGET (x86-64-v4, x86-64, ...)}
start=$(date +%s)
BUILD_DIR=build-check-$target STALE_WERROR=ON bash scripts/build.sh -DSTALE_MARCH="$target" -DSTALE_NATIVE=OFF \
  -DSTALE_CUDA=OFF -DSTALE_BUILD_BENCHMARKS=OFF >/dev/null
echo "compile_check.sh: $target compiled and linked with -Werror in $(( $(date +%s) - start )) s" >&2
