#!/usr/bin/env bash
# Installs what stale needs on Debian 12 (root): the C++ libraries from Debian packages and
# the Python analysis stack from PyPI. Idempotent: packages already present are skipped.
# The CUDA toolkit is not installed here; the build uses it when nvcc is on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake git pkg-config libeigen3-dev libhdf5-dev doctest-dev libbenchmark-dev
          libtomlplusplus-dev libcli11-dev python3 python3-pip)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! python3 -c "import numpy, h5py, matplotlib, pandas, pytest, scikit_build_core, nanobind" 2>/dev/null; then
  echo "setup: installing Python packages from scripts/requirements.txt" >&2
  python3 -m pip install -q -r scripts/requirements.txt 2>/dev/null ||
    python3 -m pip install -q --break-system-packages -r scripts/requirements.txt
fi
# PyTorch for stale.torch and its tests (tests/python/test_stage_model_torch.py, skipped without it;
# STALE_TORCH=0 skips this). pip, not Debian's python3-torch: that is 1.13 (older than the 2.x
# stale.torch is tested with), built against Debian's numpy 1.x, which the numpy 2 from requirements.txt shadows. Give the PyTorch
# project's CPU wheel index in STALE_TORCH_INDEX (README "Your own model": pip's default index works
# too, but its Linux wheel pulls the CUDA libraries: 5.2 GB installed). Measured costs:
# results/PERFORMANCE.md, "PyTorch stages".
if [[ ${STALE_TORCH:-1} != 0 ]] && ! python3 -c "import torch" 2>/dev/null; then
  echo "setup: installing torch${STALE_TORCH_INDEX:+ from $STALE_TORCH_INDEX}" >&2
  torch_args=(-q "torch>=2.0")
  [[ -n ${STALE_TORCH_INDEX:-} ]] && torch_args+=(--index-url "$STALE_TORCH_INDEX")
  # torch is optional: without it stale.torch's tests report skipped, so a failed install (no
  # network, no disk for its 5.2 GB) is a warning, not the end of set-up
  python3 -m pip install "${torch_args[@]}" 2>/dev/null || python3 -m pip install --break-system-packages "${torch_args[@]}" ||
    echo "setup: warning: torch could not be installed; stale.torch's tests will report skipped" >&2
fi
# PEPit + cvxpy + Clarabel + SCS for stale.certify and its tests (tests/python/test_certify.py,
# skipped without them; pyproject's extra [certify]); STALE_CERTIFY=0 skips this
if [[ ${STALE_CERTIFY:-1} != 0 ]] && ! python3 -c "import PEPit, cvxpy, clarabel, scs" 2>/dev/null; then
  echo "setup: installing pepit cvxpy clarabel scs" >&2
  python3 -m pip install -q pepit cvxpy clarabel scs 2>/dev/null ||
    python3 -m pip install -q --break-system-packages pepit cvxpy clarabel scs ||
    echo "setup: warning: pepit/cvxpy could not be installed; the certificate tests will report skipped" >&2
fi
echo "setup: dependencies present" >&2
