#!/usr/bin/env bash
# Builds the CUDA test and benchmark programs on a machine with nvcc and the Debian
# libraries, and packs them with the shared libraries they need into DIR (default
# .gpu_bundle), for a GPU machine that has the CUDA driver but cannot install packages:
#   here:        bash scripts/gpu_bundle.sh
#   GPU machine: STALE_GPU_PREBUILT=$PWD/.gpu_bundle STALE_DATA_DIR=$PWD/.gpu_bundle/data \
#                  bash .gpu_bundle/scripts/gpu_check.sh
#                STALE_DATA_DIR=$PWD/.gpu_bundle/data bash .gpu_bundle/scripts/e5_paper_scale.sh \
#                  $PWD/.gpu_bundle/stale OUTDIR 2100 "PD γs" "LocalSGD γs"
#   (absolute paths: gpu_check.sh changes into the folder above its own)
# Built for the default target, x86-64-v3 (the GPU machine's CPU may differ from this one's; the
# golden digests, tests/golden, check that its run files carry the same bits there).
# cuBLAS and the CUDA runtime are not packed: the GPU machine's CUDA toolkit provides them.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-.gpu_bundle}
BUILD=${STALE_GPU_BUILD:-build-gpu-bundle}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSTALE_CUDA=ON -DSTALE_NATIVE=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="${STALE_CUDA_ARCHS:-90}" >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target stale stale_cuda test_gpu test_objectives test_core bench_gradients bench_charlm
rm -rf "$DIR" && mkdir -p "$DIR/lib"
for t in stale test_gpu test_objectives test_core bench_gradients bench_charlm; do cp "$BUILD/$t" "$DIR/"; done
# the CUDA plugin the programs open on first use of the cuda backend (next to them)
cp "$BUILD/libstale_cuda.so" "$DIR/"
# the non-system libraries they link (HDF5, toml++, benchmark, OpenMP, cuBLAS, …)
for t in "$DIR"/stale "$DIR"/test_* "$DIR"/bench_* "$DIR"/libstale_cuda.so; do
  ldd "$t" | awk '/=> \// {print $3}'
done | sort -u | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux|libgcc_s|libstdc\+\+)\.so' |
  grep -vE 'lib(cuda|cudart|cublas|cublasLt)\.so' | while read -r lib; do cp -L "$lib" "$DIR/lib/"; done
# what the device commands read besides the programs (the GPU machine gets this folder, not
# the checkout this was built from): the scripts, the experiment configs and Tiny Shakespeare
# (from $STALE_DATA_DIR or ../shared/data; the bundle folder is ignored by git, so the data
# is never committed)
mkdir -p "$DIR/scripts" "$DIR/experiments" "$DIR/data" "$DIR/tests/golden"
cp tests/golden/golden_digests.py tests/golden/digests.json "$DIR/tests/golden/"
cp scripts/gpu_check.sh scripts/e5_paper_scale.sh "$DIR/scripts/"
cp experiments/*.toml "$DIR/experiments/"
for d in "${STALE_DATA_DIR:-}" ../shared/data; do
  if [[ -n $d && -f $d/tinyshakespeare.txt ]]; then cp "$d/tinyshakespeare.txt" "$DIR/data/"; break; fi
done
[[ -f $DIR/data/tinyshakespeare.txt ]] || echo "note: tinyshakespeare.txt not found: E5 and bench_charlm need it in $DIR/data"
du -sh "$DIR"
