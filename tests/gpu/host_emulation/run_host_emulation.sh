#!/usr/bin/env bash
# Runs the linear models' GPU suite (tests/gpu/test_linear_cuda.cpp) on a host emulation of CUDA and cuBLAS, for machines
# without a GPU (this project's CI and most development machines).
#
# What it checks: the host code of objectives/linear/linear_model_cuda.cu — every cuBLAS call's
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
# the build's own instruction-set target and Eigen settings (CMakeLists.txt, stale_flags): objects
# compiled for another target (-march=native on an AVX-512 CPU: Eigen aligns to 64 bytes, the
# x86-64-v3 archives to 32) disagree on Eigen's object layout, and the suite crashes
TARGET=$(sed -n 's/.*cpu_target = "\(.*\)";/\1/p' "$BUILD/generated/src/core/build_info.hpp")
FLAGS=(-std=c++20 -O2 -march="${TARGET:-native}" -fopenmp -w -I"$EMU" -I"$ROOT" -I"$BUILD/generated" -I/usr/include/eigen3
       -I"$HDF5_INC" -DSTALE_SOURCE_DIR="\"$ROOT\"" -DSTALE_BINARY_DIR="\"$BUILD\""
       -DEIGEN_NO_CPUID -DEIGEN_DEFAULT_L1_CACHE_SIZE=32768 -DEIGEN_DEFAULT_L2_CACHE_SIZE=262144
       -DEIGEN_DEFAULT_L3_CACHE_SIZE=2097152 -DEIGEN_DONT_PARALLELIZE)

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
compile "$ROOT/objectives/linear/linear_model_cuda.cu" "$OUT/linear_model_cuda.o" -x c++ && OBJS+=("$OUT/linear_model_cuda.o")
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
for stub in "$ROOT"/objectives/*/*_nocuda.cpp; do
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
