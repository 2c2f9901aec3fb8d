#!/usr/bin/env bash
# Compiles the project for another instruction-set target with warnings as errors, without
# running anything: CI's guard against a build that breaks only on a CPU it does not have (an
# AVX-512 machine's Eigen paths, say). A binary for x86-64-v4 cannot run on a CPU without
# AVX-512; it only has to compile and link here.
#
#   bash scripts/compile_check.sh x86-64-v4          # AVX-512 (Intel Xeon, AMD Zen 4): everything
#   bash scripts/compile_check.sh x86-64 stale       # generic x86-64 (SSE2): only these targets
#
# Builds the libraries, the CLI and every test suite (not the benchmarks or CUDA: their code is
# the same on every target), or only the targets named after TARGET, in build-check-TARGET/.
# Measured from cold on 2 cores (fresh clone, 2026-11-26): everything for x86-64-v4 464 s;
# incremental when the folder is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: compile_check.sh TARGET [BUILD_TARGET ...] (TARGET: x86-64-v4, x86-64, ...)}
shift
start=$(date +%s)
BUILD_TARGETS="$*" BUILD_DIR=build-check-$target STALE_WERROR=ON bash scripts/build.sh -DSTALE_MARCH="$target" -DSTALE_NATIVE=OFF \
  -DSTALE_CUDA=OFF -DSTALE_BUILD_BENCHMARKS=OFF >/dev/null
echo "compile_check.sh: $target compiled and linked with -Werror in $(( $(date +%s) - start )) s" >&2
