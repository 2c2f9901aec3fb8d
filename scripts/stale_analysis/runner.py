"""The one way the experiment scripts start the `stale` binary: a run, a sweep or a schedule,
each as a child process with its output captured, a failure turned into one line that names
the command and the binary's own last error line (an AnalysisError: exit code 2 through
run_cli), and an existing output kept when the caller resumes.

    from stale_analysis import runner
    runner.run(binary, "experiments/e1_random_quadratic.toml", "method.lr=0.01", out="runs/a.h5")
    runner.sweep(binary, "experiments/e1_sweep.toml", out="sweeps/e1_sweep", jobs=2)
    runner.schedule(binary, "pipedream", stages=8, microbatches=64, out="runs/pd8.h5")

`threads=1` sets OMP_NUM_THREADS for the child: scripts that run several children at once give
each one core (results never depend on the thread count; the wall time does).
"""
from __future__ import annotations

import os
import subprocess

from .errors import AnalysisError


def stale(binary: str, *args, threads: int | None = None, cwd: str | None = None) -> subprocess.CompletedProcess:
    """`binary args…`, captured; raises AnalysisError with the command and its last error line."""
    cmd = [binary, *map(str, args)]
    # a passive wait: idle OpenMP threads of children running side by side do not spin
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY="passive") if threads else None
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    except OSError as e:
        raise AnalysisError(f"{binary}: cannot start it ({e.strerror}); build it (bash scripts/build.sh) or pass "
                            "--bin / set STALE_BIN") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise AnalysisError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}): {last}")
    return proc


def run(binary: str, config: str, *overrides, out: str, resume: bool = False, force: bool = False,
        threads: int | None = None, cwd: str | None = None) -> str:
    """`stale run config overrides… --out out --quiet`; with resume an existing file is kept."""
    if resume and os.path.exists(out):
        return out
    stale(binary, "run", config, *overrides, "--out", out, "--quiet", *(["--force"] if force else []),
          threads=threads, cwd=cwd)
    return out


def sweep(binary: str, sweep_file: str, out: str, jobs: int = 1, threads: int | None = None,
          cwd: str | None = None, report: bool = False) -> str:
    """`stale sweep sweep_file --jobs jobs -q --out out` (a sweep resumes by itself); with report
    its summary line (runs ran, skipped, failed) goes to stderr."""
    proc = stale(binary, "sweep", sweep_file, "--jobs", jobs, "-q", "--out", out, threads=threads, cwd=cwd)
    if report:
        import sys

        print((proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or [""])[-1], file=sys.stderr)
    return out


def schedule(binary: str, name: str, stages: int, microbatches: int, out: str, *options, resume: bool = True) -> str:
    """`stale schedule name --stages S --microbatches M --out out options…`; an existing file is kept."""
    if resume and os.path.exists(out):
        return out
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    stale(binary, "schedule", name, "--stages", stages, "--microbatches", microbatches, "--out", out, *options)
    return out
