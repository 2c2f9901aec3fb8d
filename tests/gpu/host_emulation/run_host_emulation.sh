#!/usr/bin/env bash
# Runs the linear models' GPU suite (tests/gpu/test_linear_cuda.cpp) on a host emulation of CUDA and cuBLAS, for machines
# without a GPU (this project's CI and most development machines).
#
# What it checks: the host code of objectives/linear_model_cuda.cu — every cuBLAS call's
# shapes, leading dimensions, transposes and pointer offsets, the copy directions and sizes,
# the grouping and packing of batched points, the precision conversions, the stream
# ordering (queued work runs only at synchronisation) — against the CPU twin, with the
# tolerances of the real suite. emulation.cpp lists its checks.
# What it cannot check: the device compiler, real cuBLAS numerics, and the kernel as the
# GPU runs it (the emulated kernel is the same loop body run on the host). Those need
# scripts/gpu_check.sh on a GPU machine.
#
# usage: tests/gpu/host_emulation/run_host_emulation.sh BUILD_DIR [doctest options]
#   BUILD_DIR: a configured and built tree (CPU-only or CUDA) holding libstale_*.a, e.g.
#   after `cmake --build BUILD_DIR --target stale_run`. The emulated objects define the
#   CUDA-facing symbols first, so the archives' own versions of them are never linked.
#   STALE_EMULATE_NO_DEVICE=1 makes the emulation report no device.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
BUILD=$(cd "${1:?usage: $0 BUILD_DIR [doctest options]}" && pwd)
shift
EMU=$ROOT/tests/gpu/host_emulation
OUT=$BUILD/host_emulation
mkdir -p "$OUT"
HDF5_INC=/usr/include/hdf5/serial
HDF5_LIB=$(ls /usr/lib/x86_64-linux-gnu/hdf5/serial/libhdf5.so 2>/dev/null || echo -lhdf5)
# the main build's target and fixed Eigen blocking (CMakeLists.txt, "the instruction-set target")
FLAGS=(-std=c++20 -O2 -march=x86-64-v3 -DEIGEN_NO_CPUID -DEIGEN_DONT_PARALLELIZE -fopenmp -w -I"$EMU" -I"$ROOT" -I"$BUILD/generated" -I/usr/include/eigen3
       -I"$HDF5_INC" -DSTALE_SOURCE_DIR="\"$ROOT\"" -DSTALE_BINARY_DIR="\"$BUILD\"")

compile() {  # source object [extra flags]
  local src=$1 obj=$2
  shift 2
  if [[ ! -f $obj || $src -nt $obj || $EMU/emulation.cpp -nt $obj ]]; then
    echo "  g++ $(realpath --relative-to="$ROOT" "$src")"
    g++ "${FLAGS[@]}" "$@" -c "$src" -o "$obj"
  fi
}

echo "host emulation: compiling into $OUT"
OBJS=()
compile "$ROOT/objectives/linear_model_cuda.cu" "$OUT/linear_model_cuda.o" -x c++ && OBJS+=("$OUT/linear_model_cuda.o")
compile "$ROOT/src/backend/cuda_runtime.cu" "$OUT/cuda_runtime.o" -x c++ && OBJS+=("$OUT/cuda_runtime.o")
compile "$EMU/emulation.cpp" "$OUT/emulation.o" && OBJS+=("$OUT/emulation.o")
compile "$ROOT/tests/test_main.cpp" "$OUT/test_main.o" && OBJS+=("$OUT/test_main.o")
# the suites whose device code is emulated here (the linear models: one elementwise kernel,
# whose host twin is in emulation.cpp); other objectives' kernels are not emulated
for t in "$ROOT"/tests/gpu/test_linear_cuda.cpp; do
  o=$OUT/$(basename "$t" .cpp).o
  compile "$t" "$o" && OBJS+=("$o")
done
# every other CUDA seam is linked as its "built without CUDA" stub, so that no real device
# object (and no real CUDA runtime) is pulled from a CUDA build's archives
for stub in "$ROOT"/objectives/*_nocuda.cpp; do
  case $stub in *linear_model_cuda_nocuda.cpp) continue ;; esac
  o=$OUT/$(basename "$stub" .cpp).stub.o
  compile "$stub" "$o" && OBJS+=("$o")
done

LIBS=()
for l in run optimizers objectives delays pipeline io backend core; do LIBS+=("$BUILD/libstale_$l.a"); done
g++ -fopenmp -o "$OUT/test_gpu_emulated" "${OBJS[@]}" -Wl,--start-group "${LIBS[@]}" -Wl,--end-group \
  "$HDF5_LIB" -ltomlplusplus -lm -lpthread
echo "host emulation: running $OUT/test_gpu_emulated $*"
STALE_REQUIRE_GPU=${STALE_REQUIRE_GPU:-1} "$OUT/test_gpu_emulated" "$@"
