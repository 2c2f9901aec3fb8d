#!/usr/bin/env bash
# The README's test command: install dependencies, build, run the whole test suite.
# GPU suites skip without a device (set STALE_REQUIRE_GPU=1 to make that a failure).
#
#   bash scripts/test.sh              # Release build in build/, every suite
#   bash scripts/test.sh --sanitize   # ASan + UBSan build in build-sanitize/ (CUDA and benchmarks
#                                     # off), a fast subset: STALE_SANITIZE_TESTS is the ctest -R
#                                     # pattern, STALE_FUZZ_ITERATIONS the fuzz inputs per reader,
#                                     # STALE_SANITIZE_TARGETS the targets to build (default all),
#                                     # STALE_SANITIZE_OPT the optimisation flags (default -O2 -g)
#   bash scripts/test.sh --sanitize=thread  # ThreadSanitizer build in build-tsan/ of the CLI and the
#                                     # sweep engine's suite (test_run), running the tests whose
#                                     # sweeps share objectives, plans and chunk caches across
#                                     # worker threads (STALE_TSAN_TESTS: the ctest -R pattern),
#                                     # then tests/resume/signals.py on the TSan binary.
#                                     # OpenMP: libgomp is not built with TSan, so its barriers are
#                                     # invisible and every parallel loop would be reported as a
#                                     # race (measured: a logistic pipedream run at d = 1024 with
#                                     # two threads gave 10 reports, each a worker's access inside
#                                     # gemv_t_parallel's region against the master's after the
#                                     # region's join); the sweep workers run each run serially
#                                     # anyway (SerialScope), so OMP_NUM_THREADS=1 here, and
#                                     # scripts/tsan.supp silences what libgomp itself still does.
#                                     # Races inside OpenMP loops are not what this checks.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
if [[ "${1:-}" == "--sanitize=thread" ]]; then
  bash scripts/setup.sh
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  san="-fsanitize=thread -fno-omit-frame-pointer"
  BUILD_TARGETS=${STALE_SANITIZE_TARGETS:-stale test_run} BUILD_DIR=${BUILD_DIR:-build-tsan} STALE_WERROR=${STALE_WERROR:-OFF} bash scripts/build.sh \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=${STALE_SANITIZE_OPT:--O1 -g -DNDEBUG}" \
    -DSTALE_CUDA=OFF -DSTALE_BUILD_BENCHMARKS=OFF -DSTALE_NATIVE=OFF \
    "-DCMAKE_CXX_FLAGS=$san" "-DCMAKE_EXE_LINKER_FLAGS=$san" "${launcher[@]}"
  root=$(pwd)
  supp="$root/scripts/tsan.supp"
  cd "${BUILD_DIR:-build-tsan}"
  export OMP_NUM_THREADS=1
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$supp}
  ctest --output-on-failure --no-tests=error -j "$(nproc)" --timeout 1800 \
    -R "${STALE_TSAN_TESTS:-^run:(InProcessSweep|ADivergingRunInAnInProcessSweep|TheIndexFromMemory|JobsOneAndJobsTwo|KilledSweepResumes|ASweepGroupsAStepSizeGrid|ADuplicateGridPoint)}"
  # the stop paths across threads and processes: workers stopping mid-run, a sweep ending while
  # its workers are in set-up, --isolate children (tests/resume/signals.py; TSan's slower
  # processes get 5 s instead of 1)
  python3 "$root/tests/resume/signals.py" --stale "$(pwd)/stale" --limit 5
  echo "test.sh --sanitize=thread: total $(( $(date +%s) - start )) s" >&2
  exit 0
fi
if [[ "${1:-}" == "--sanitize" || "${1:-}" == "--sanitize=address" ]]; then
  bash scripts/setup.sh
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  BUILD_TARGETS=${STALE_SANITIZE_TARGETS:-} BUILD_DIR=${BUILD_DIR:-build-sanitize} STALE_WERROR=${STALE_WERROR:-OFF} bash scripts/build.sh \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=${STALE_SANITIZE_OPT:--O2 -g -DNDEBUG}" \
    -DSTALE_CUDA=OFF -DSTALE_BUILD_BENCHMARKS=OFF -DSTALE_NATIVE=OFF \
    "-DCMAKE_CXX_FLAGS=$san" "-DCMAKE_EXE_LINKER_FLAGS=$san" "${launcher[@]}"
  cd "${BUILD_DIR:-build-sanitize}"
  # leaks are not errors here (OpenMP and HDF5 keep process-lifetime allocations); any other
  # report aborts the test that triggered it
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  ctest --output-on-failure --no-tests=error -j "$(nproc)" --timeout 1200 \
    -R "${STALE_SANITIZE_TESTS:-^(core|config|delays|pipeline|bad_inputs|fuzz|cli):}"
  echo "test.sh --sanitize: total $(( $(date +%s) - start )) s" >&2
  exit 0
fi
bash scripts/setup.sh
STALE_WERROR=${STALE_WERROR:-ON} bash scripts/build.sh
root=$(pwd)
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" --timeout 600
# the NumPy reference's own checks against theory.md (the golden test above trusts it)
python3 "$root/tests/reference/test_reference.py" >/dev/null
cd "$root"
# the Python package (tests/python/test_package*.py run against it)
bash scripts/install_python.sh
# the notebook-style example: the main figure from Python
MPLBACKEND=Agg python3 examples/quickstart.py --out "${BUILD_DIR:-build}/quickstart_example.png" >/dev/null
# the PyTorch example (README "Your own model"), where setup.sh could install torch; its runs go to build/runs/
if python3 -c "import torch" 2>/dev/null; then
  (cd "${BUILD_DIR:-build}" && MPLBACKEND=Agg python3 "$root/examples/torch_mlp.py" >/dev/null)
fi
# the analysis scripts and the Python package (tests/python, pytest); exit code 5 = no tests collected, which is a failure here too
STALE_BIN="${BUILD_DIR:-build}/stale" python3 -m pytest -q tests/python || { rc=$?; [[ $rc -eq 5 ]] && echo "test.sh: pytest collected no tests" >&2; exit "$rc"; }
echo "test.sh: total $(( $(date +%s) - start )) s" >&2
