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
echo "setup: dependencies present" >&2
