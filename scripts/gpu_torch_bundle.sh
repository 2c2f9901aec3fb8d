#!/usr/bin/env bash
# Packs what scripts/gpu_torch_check.sh needs on a GPU machine that has PyTorch but cannot build
# the package (no compiler, no Debian -dev libraries, no network): a wheel of the Python package
# `stale` for each interpreter the machine may run, in DIR/wheels (default .gpu_bundle/wheels).
# The checkout itself travels with the device command, so the tests and scripts need no copy;
# the shared libraries the extension links (HDF5, toml++, OpenMP) are the ones
# scripts/gpu_bundle.sh packs into DIR/lib.
#
#   here:        bash scripts/gpu_bundle.sh && bash scripts/gpu_torch_bundle.sh
#                STALE_BUNDLE_PYTHONS="python3 3.12.1" bash scripts/gpu_torch_bundle.sh   # pyenv versions too
#   GPU machine: STALE_GPU_PREBUILT=.gpu_bundle bash scripts/gpu_torch_check.sh
#
# Each interpreter needs the build backend (scikit-build-core, nanobind): installed with pip
# where missing. The wheels are built for the default target, x86-64-v3, CPU only (the package
# never uses CUDA itself: a PyTorch model's tensors do). One wheel takes a few minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-.gpu_bundle}
mkdir -p "$DIR/wheels"
for py in ${STALE_BUNDLE_PYTHONS:-python3}; do
  # a bare version number names a pyenv interpreter
  if [[ $py =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]]; then run=(env "PYENV_VERSION=$py" python); else run=("$py"); fi
  if ! "${run[@]}" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null; then
    echo "gpu_torch_bundle: $py is not a Python 3.11 or later (pyproject.toml's requires-python): skipped" >&2
    continue
  fi
  if ! "${run[@]}" -c 'import scikit_build_core, nanobind' 2>/dev/null; then
    "${run[@]}" -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.0" 2>/dev/null ||
      "${run[@]}" -m pip install -q --break-system-packages "scikit-build-core>=0.10" "nanobind>=2.0"
  fi
  tag=$("${run[@]}" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
  start=$(date +%s)
  # a build folder per interpreter, kept: a second bundle recompiles only what changed
  "${run[@]}" -m pip wheel -q --no-build-isolation --no-deps -Cbuild-dir="build-python-bundle/$tag" . -w "$DIR/wheels"
  echo "gpu_torch_bundle: $tag wheel in $(( $(date +%s) - start )) s" >&2
done
ls -l "$DIR/wheels"
