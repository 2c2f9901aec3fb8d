#!/usr/bin/env bash
# One call on a GPU machine with PyTorch (CUDA): stale.torch's tests with their CUDA variants,
# and the harness's overhead on the GPU (scripts/bench_torch_overhead.py --device cuda), saved
# as a short report. Runs in the checkout (the device command's working tree); the package comes
# from a wheel that scripts/gpu_torch_bundle.sh built for this machine's Python, or from an
# installed `stale`.
#
#   STALE_GPU_PREBUILT=.gpu_bundle bash scripts/gpu_torch_check.sh
#
# Environment (all optional):
#   STALE_GPU_PREBUILT  the bundle folder: wheels/ (the package), lib/ (the libraries it links),
#                       stale (the CLI, for the tests that call it)
#   PYTHON              the interpreter with torch (default python3)
#   STALE_BENCH_WIDTHS  widths W of the bench's Linear(W, W) stages, batch W (default "512 1024 2048 4096")
#   STALE_BENCH_LIMIT   seconds each bench row may take (default 150)
#   STALE_BENCH_DEVICE  cuda (default), or cpu to rehearse the script where there is no GPU
#   OUT                 where the report goes (default results/gpu)
# Without a CUDA device the tests' CUDA variants report skipped and the bench is left out; the
# report says so.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
PY=${PYTHON:-python3}
OUTDIR=${OUT:-$ROOT/results/gpu}
STAMP=$(date -u +%Y-%m-%d)
mkdir -p "$OUTDIR"
LOG=$OUTDIR/torch_check_${STAMP}.log
REPORT=$OUTDIR/torch_check_${STAMP}.md
: >"$LOG"
say() { echo "[gpu_torch_check] $*" | tee -a "$LOG" >&2; }
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg

BUNDLE=${STALE_GPU_PREBUILT:-}
if [[ -n $BUNDLE ]]; then
  BUNDLE=$(cd "$BUNDLE" && pwd)
  tag=$("$PY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
  wheel=$(ls "$BUNDLE"/wheels/stale-*-"$tag"-*.whl 2>/dev/null | head -1)
  if [[ -n $wheel ]]; then
    pkg=$(mktemp -d)
    "$PY" -m zipfile -e "$wheel" "$pkg"
    export PYTHONPATH="$pkg${PYTHONPATH:+:$PYTHONPATH}"
    say "package from $(basename "$wheel")"
  else
    say "no wheel for $tag in $BUNDLE/wheels (scripts/gpu_torch_bundle.sh with STALE_BUNDLE_PYTHONS naming this Python): trying an installed stale"
  fi
  [[ -d $BUNDLE/lib ]] && export LD_LIBRARY_PATH="$BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [[ -x $BUNDLE/stale ]] && export STALE_BIN="$BUNDLE/stale"
fi
if ! "$PY" -c 'import stale, torch' 2>>"$LOG"; then
  say "cannot import stale and torch with $PY (see $LOG)"
  exit 2
fi
facts=$("$PY" -c 'import stale, torch, platform
cuda = torch.cuda.is_available()
print(f"stale {stale.__version__} {stale.git_sha}, torch {torch.__version__}, Python {platform.python_version()}, "
      + (f"{torch.cuda.get_device_name()} (CUDA {torch.version.cuda})" if cuda else "no CUDA device"))')
cuda=$("$PY" -c 'import torch; print(int(torch.cuda.is_available()))')
say "$facts"

# ---- 1. the tests: every torch and stage-model test, the CUDA variants where CUDA is
say "tests: tests/python/test_stage_model*.py"
t0=$(date +%s)
"$PY" -m pytest -q -rs tests/python/test_stage_model.py tests/python/test_stage_model_torch.py \
  tests/python/test_stage_model_torch_charlm.py 2>&1 | tee -a "$LOG" | tail -n 25 >"$OUTDIR/.tests_tail"
tests_rc=${PIPESTATUS[0]}
tests_s=$(( $(date +%s) - t0 ))
summary=$(grep -E '[0-9]+ (passed|failed)' "$OUTDIR/.tests_tail" | tail -1)
say "tests: exit $tests_rc in ${tests_s} s: $summary"

# ---- 2. the overhead on the GPU, one row per width
rows=""
device=${STALE_BENCH_DEVICE:-cuda}
if [[ $cuda == 1 || $device == cpu ]]; then
  threads=$(nproc)
  for W in ${STALE_BENCH_WIDTHS:-512 1024 2048 4096}; do
    say "bench: --device $device --threads $threads --width $W --batch $W"
    out=$(timeout "${STALE_BENCH_LIMIT:-150}" "$PY" scripts/bench_torch_overhead.py --device "$device" --threads "$threads" \
      --width "$W" --batch "$W" --repeats 3 2>&1)
    rc=$?
    echo "$out" >>"$LOG"
    h=$(grep -oP 'harness run \(stale.run\):\s+\K[0-9.]+' <<<"$out")
    p=$(grep -oP 'plain PyTorch loop:\s+\K[0-9.]+' <<<"$out")
    r=$(grep -oP 'ratio harness / plain:\s+\K[0-9.]+' <<<"$out")
    m=$(grep -oP 'ratio harness / plain with float64 master weights: \K[0-9.]+' <<<"$out")
    rows+="| W = $W, batch $W | ${h:-–} s | ${p:-–} s | ${r:-–} | ${m:-–} | $([[ $rc == 0 ]] && echo ok || echo "exit $rc") |"$'\n'
  done
fi

# ---- 3. the report
{
  echo "# stale.torch on a GPU, $STAMP"
  echo
  echo "$facts. Made by \`scripts/gpu_torch_check.sh\`; the full output is in $(basename "$LOG")."
  echo
  echo "## Tests"
  echo
  echo "    python -m pytest -q -rs tests/python/test_stage_model.py tests/python/test_stage_model_torch.py tests/python/test_stage_model_torch_charlm.py"
  echo
  echo "Exit $tests_rc in $tests_s s: $summary"
  echo
  echo '```'
  cat "$OUTDIR/.tests_tail"
  echo '```'
  echo
  echo "## Overhead: harness against a plain PyTorch loop (float32, four stages of Linear(W, W) + Tanh)"
  echo
  if [[ -n $rows ]]; then
    echo "    python scripts/bench_torch_overhead.py --device $device --threads $(nproc) --width W --batch W --repeats 3"
    echo
    echo "| config | harness run | plain loop | harness / plain | harness / float64-master loop | |"
    echo "|---|---|---|---|---|---|"
    printf '%s' "$rows"
  else
    echo "Not run: no CUDA device (STALE_BENCH_DEVICE=cpu runs it on the CPU)."
  fi
} >"$REPORT"
rm -f "$OUTDIR/.tests_tail"
say "report: $REPORT"
exit "$tests_rc"
