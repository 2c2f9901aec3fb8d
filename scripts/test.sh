#!/usr/bin/env bash
# The README's test command: install dependencies, build, run the whole test suite.
# GPU suites skip without a device (set STALE_REQUIRE_GPU=1 to make that a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/setup.sh
STALE_WERROR=${STALE_WERROR:-ON} bash scripts/build.sh
root=$(pwd)
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" --timeout 600
# the NumPy reference's own checks against theory.md (the golden test above trusts it)
python3 "$root/tests/reference/test_reference.py" >/dev/null
echo "test.sh: total $(( $(date +%s) - start )) s" >&2
