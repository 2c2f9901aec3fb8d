#!/usr/bin/env bash
# Builds and installs the Python package `stale` (pyproject.toml: scikit-build-core + nanobind,
# CPU only) from this checkout: `import stale` afterwards. The build folder build-python/ is
# kept, so a second install recompiles only what changed. Needs scripts/setup.sh's packages.
set -euo pipefail
cd "$(dirname "$0")/.."
args=(--no-build-isolation)  # scikit-build-core and nanobind come from scripts/requirements.txt
if command -v ccache >/dev/null; then args+=(-Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
start=$(date +%s)
# Debian's Python refuses a plain `pip install` outside a virtual environment (PEP 668)
python3 -m pip install -q "${args[@]}" . 2>/dev/null ||
  python3 -m pip install -q --break-system-packages "${args[@]}" .
echo "install_python.sh: stale $(python3 -c 'import stale; print(stale.__version__, stale.git_sha)') installed in $(( $(date +%s) - start )) s" >&2
