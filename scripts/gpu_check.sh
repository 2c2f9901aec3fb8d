#!/usr/bin/env bash
# One call on a GPU machine: build the CUDA backend, run the GPU suite with a device
# required, run the gradient benchmarks, and print (and save) a short table.
#
#   bash scripts/gpu_check.sh
#
# Works on a bare machine with the CUDA toolkit and cmake: missing Debian -dev packages are
# installed with apt-get when a mirror is reachable; otherwise it says what is missing.
#
# Environment (all optional):
#   STALE_CUDA_ARCHS   CMAKE_CUDA_ARCHITECTURES (default: the device's compute capability,
#                      e.g. 90 on H100/H200, so only one architecture is compiled)
#   STALE_GPU_BUILD    build directory (default: build-gpu)
#   STALE_BENCH_FILTER Google Benchmark filter (default: all of bench_gradients)
#   OUT                where the report goes (default: results/gpu); set on the device runner
#   STALE_GPU_PREBUILT programs packed by scripts/gpu_bundle.sh: skip packages and build
#                      (for a GPU machine that cannot install the Debian libraries)
#   JOBS               parallel build jobs (default: nproc)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${STALE_GPU_BUILD:-$ROOT/build-gpu}
OUTDIR=${OUT:-$ROOT/results/gpu}
JOBS=${JOBS:-$(nproc)}
STAMP=$(date -u +%Y-%m-%d)
mkdir -p "$OUTDIR"
LOG=$OUTDIR/gpu_check_${STAMP}.log
: >"$LOG"
say() { echo "[gpu_check] $*" | tee -a "$LOG" >&2; }
run() { say "\$ $*"; "$@" 2>&1 | tee -a "$LOG"; return "${PIPESTATUS[0]}"; }

# ---- 1. packages -----------------------------------------------------------------------------
missing_packages() {
  local m=()
  [[ -f /usr/include/eigen3/Eigen/Dense ]] || m+=(libeigen3-dev)
  [[ -f /usr/include/hdf5/serial/hdf5.h || -f /usr/include/hdf5.h ]] || m+=(libhdf5-dev)
  [[ -f /usr/include/toml++/toml.h || -f /usr/include/toml++/toml.hpp ]] || m+=(libtomlplusplus-dev)
  [[ -f /usr/include/CLI/CLI.hpp ]] || m+=(libcli11-dev)
  [[ -f /usr/include/doctest/doctest.h ]] || m+=(doctest-dev)
  [[ -f /usr/include/benchmark/benchmark.h ]] || m+=(libbenchmark-dev)
  command -v cmake >/dev/null || m+=(cmake)
  command -v g++ >/dev/null || m+=(g++)
  echo "${m[@]:-}"
}
PREBUILT=${STALE_GPU_PREBUILT:-}
if [[ -n $PREBUILT ]]; then
  BUILD=$(cd "$PREBUILT" && pwd)
  # cuBLAS and the CUDA runtime come from this machine's toolkit, the rest from the bundle
  export LD_LIBRARY_PATH="$BUILD/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  MISSING=""
  say "prebuilt programs from $BUILD (scripts/gpu_bundle.sh): no package or build step"
else
  MISSING=$(missing_packages)
fi
if [[ -n $MISSING ]]; then
  say "missing packages: $MISSING"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then command -v sudo >/dev/null && SUDO="sudo -n"; fi
  if command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck disable=SC2086
    if timeout 180 $SUDO apt-get update -qq >>"$LOG" 2>&1 &&
      timeout 900 $SUDO apt-get install -y -qq --no-install-recommends $MISSING >>"$LOG" 2>&1; then
      say "installed: $MISSING"
    else
      say "apt-get could not install them (no reachable mirror, or no root); see $LOG"
    fi
  else
    say "no apt-get on this machine"
  fi
  MISSING=$(missing_packages)
fi
for p in $MISSING; do
  case $p in
    doctest-dev) say "without doctest-dev the test suites are not built: only the benchmarks run" ;;
    libbenchmark-dev) say "without libbenchmark-dev the benchmarks are not built: only the tests run" ;;
    *) say "cannot continue: $p is required (install: apt-get install $MISSING)"; exit 2 ;;
  esac
done

# ---- 2. CUDA toolkit and device --------------------------------------------------------------
if ! command -v nvcc >/dev/null; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do [[ -x $d/nvcc ]] && export PATH=$d:$PATH && break; done
fi
command -v nvcc >/dev/null || { say "cannot continue: no nvcc (install the CUDA toolkit or add it to PATH)"; exit 2; }
NVCC_VERSION=$(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
GPU_NAME="none"; DRIVER="?"; CC=""
if command -v nvidia-smi >/dev/null; then
  IFS=',' read -r GPU_NAME DRIVER CC < <(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | head -1)
  GPU_NAME=$(echo "$GPU_NAME" | xargs); DRIVER=$(echo "$DRIVER" | xargs); CC=$(echo "$CC" | xargs)
fi
ARCH=${STALE_CUDA_ARCHS:-${CC/./}}
ARCH=${ARCH:-90}
say "device: $GPU_NAME (driver $DRIVER, compute capability ${CC:-?}), nvcc $NVCC_VERSION, archs $ARCH"

# ---- 3. configure and build ------------------------------------------------------------------
if [[ -z $PREBUILT ]]; then
  run cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSTALE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$ARCH" ||
    { say "configure failed"; exit 1; }
  TARGETS=(stale)
  [[ $MISSING != *doctest-dev* ]] && TARGETS+=(test_gpu test_objectives)
  [[ $MISSING != *libbenchmark-dev* ]] && TARGETS+=(bench_gradients bench_charlm)
  run cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" || { say "build failed"; exit 1; }
fi
run "$BUILD/stale" info

# ---- 4. tests (a device is required: a silent skip would read as a pass) ----------------------
TEST_STATUS="not built"
if [[ -x $BUILD/test_gpu ]]; then
  if run env STALE_REQUIRE_GPU=1 "$BUILD/test_gpu"; then TEST_STATUS="passed"; else TEST_STATUS="FAILED"; fi
  TEST_LINE=$(grep -E '^\[doctest\] test cases' "$LOG" | tail -1)
  run "$BUILD/test_objectives" -tc='*Batched*,*ManyPoints*' || TEST_STATUS="FAILED (cpu batched)"
fi
say "GPU suite: $TEST_STATUS ${TEST_LINE:-}"

# ---- 5. benchmarks and the table -------------------------------------------------------------
JSON=$OUTDIR/bench_gradients_${STAMP}.json
if [[ -x $BUILD/bench_gradients ]]; then
  run "$BUILD/bench_gradients" --benchmark_filter="${STALE_BENCH_FILTER:-.}" --benchmark_out="$JSON" \
    --benchmark_out_format=json || say "benchmark run failed"
fi
CHARLM_OUT=$OUTDIR/bench_charlm_${STAMP}.txt
if [[ -x $BUILD/bench_charlm ]]; then
  run "$BUILD/bench_charlm" --benchmark_min_time=0.2 >"$CHARLM_OUT" 2>&1 || say "charlm benchmark failed"
fi
REPORT=$OUTDIR/gpu_check_${STAMP}.md
{
  echo "# GPU check, $STAMP"
  echo
  echo "- device: $GPU_NAME (driver $DRIVER, compute capability ${CC:-?}); CUDA archs built: $ARCH"
  echo "- nvcc $NVCC_VERSION; host: $(nproc) cores, $(uname -m); git $(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
  echo "- GPU suite (STALE_REQUIRE_GPU=1): $TEST_STATUS ${TEST_LINE:-}"
  echo
} >"$REPORT"
if [[ -f $JSON ]] && command -v python3 >/dev/null; then
  python3 - "$JSON" >>"$REPORT" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
rows = {r["name"]: r for r in runs if r.get("run_type", "iteration") == "iteration"}
def get(name, key, default=float("nan")):
    r = rows.get(name)
    return r.get(key, default) if r and not r.get("error_occurred") else default
def fmt(x, p=3):
    return "—" if x != x else (f"{x:.{p}g}" if abs(x) < 1e4 else f"{x:.0f}")
lim = {"cpu": (get("BM_Limits_Cpu/iterations:1/real_time", "GB/s"), get("BM_Limits_Cpu/iterations:1/real_time", "GFLOP/s"))}
g = "BM_Limits_Gpu/iterations:1/real_time"
print("Measured limits: CPU STREAM triad %s GB/s, CPU Eigen DGEMM %s GFLOP/s; GPU D2D copy %s GB/s, cuBLAS DGEMM %s GFLOP/s, SGEMM %s GFLOP/s.\n"
      % (fmt(lim["cpu"][0]), fmt(lim["cpu"][1]), fmt(get(g, "GB/s")), fmt(get(g, "DGEMM_GFLOP/s")), fmt(get(g, "SGEMM_GFLOP/s"))))
print("Full-data least-squares gradients at P points, n = d (value_grad_many). P = 1 is judged by frac_bw "
      "(bytes moved ÷ measured bandwidth), P > 1 by frac_peak (flop/s ÷ measured GEMM peak).\n")
print("| backend | d | P | µs/call | GB/s | GFLOP/s | grad/s | frac_bw | frac_peak |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
backends = [("Cpu", "cpu f64"), ("GpuF64", "cuda f64"), ("GpuF32", "cuda f32")]
for d in (512, 4096, 16384):
    for key, label in backends:
        for P in (1, 8, 64):
            n = f"BM_Gradients_{key}/{d}/{P}/real_time"
            r = rows.get(n)
            if not r:
                continue
            if r.get("error_occurred"):
                print(f"| {label} | {d} | {P} | skipped: {r.get('error_message', '')} |||||||")
                continue
            print(f"| {label} | {d} | {P} | {fmt(r['real_time'], 4)} | {fmt(r['GB/s'])} | {fmt(r['GFLOP/s'])} | "
                  f"{fmt(r['grad/s'])} | {fmt(r['frac_bw'], 2)} | {fmt(r['frac_peak'], 2)} |")
print()
print("| per-call transfer (d up + d down, pinned, one sync) | d | µs | share of the cuda f64 P = 1 call |")
print("|---|---:|---:|---:|")
for d in (512, 4096, 16384):
    us = get(f"BM_GpuTransfer/{d}/real_time", "us")
    call = get(f"BM_Gradients_GpuF64/{d}/1/real_time", "real_time")
    print(f"| float64 | {d} | {fmt(us)} | {fmt(us / call, 2) if call == call and us == us else '—'} |")
print()
print("Targets: CPU P = 1 at d = 16384 frac_bw ≥ 0.70: %s; GPU f64 P = 1 at d = 16384 frac_bw ≥ 0.70: %s; "
      "GPU grad/s at P = 64 ÷ P = 1 ≥ 10: %s." % (
          fmt(get("BM_Gradients_Cpu/16384/1/real_time", "frac_bw"), 2),
          fmt(get("BM_Gradients_GpuF64/16384/1/real_time", "frac_bw"), 2),
          ", ".join(f"{k} d={d}: {fmt(get(f'BM_Gradients_{k}/{d}/64/real_time', 'grad/s') / get(f'BM_Gradients_{k}/{d}/1/real_time', 'grad/s'), 3)}"
                    for k in ("GpuF64", "GpuF32") for d in (512, 4096, 16384))))
PY
elif [[ -f $JSON ]]; then
  echo "(python3 not found: raw benchmark output follows)" >>"$REPORT"
  grep -E '^BM_' "$LOG" >>"$REPORT"
else
  echo "(no benchmark results)" >>"$REPORT"
fi
if [[ -s $CHARLM_OUT ]]; then
  { echo; echo "Character-level transformer, forward + backward (bench_charlm):"; echo; echo '```';
    grep -E '^(BM_|Benchmark|---)' "$CHARLM_OUT"; echo '```'; } >>"$REPORT"
fi
echo
cat "$REPORT"
say "report: $REPORT (log: $LOG)"
[[ $TEST_STATUS == passed ]]
