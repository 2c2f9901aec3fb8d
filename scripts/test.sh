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
cd "$root"
# the analysis scripts (tests/python, pytest); exit code 5 = no tests collected, which is a failure here too
STALE_BIN="${BUILD_DIR:-build}/stale" python3 -m pytest -q tests/python || { rc=$?; [[ $rc -eq 5 ]] && echo "test.sh: pytest collected no tests" >&2; exit "$rc"; }
echo "test.sh: total $(( $(date +%s) - start )) s" >&2
