#!/usr/bin/env python3
"""Runs with coupled costs say up front that they cannot continue (issue 54, item 2): real
processes, registered with CTest.

  python3 tests/resume/coupled.py --stale build/stale

A run whose op durations follow its own state (costs.coupling = data | gradient | weight) writes
no checkpoint: a resume could not replay its timeline. So:
1. it says so on stderr before it runs (one warning line naming costs.coupling);
2. stopped by SIGINT it exits 130 and its message says to rerun it with --force, not to resume;
3. `--resume` of its .partial is refused in one line (exit 2): before, it restarted from k = 0
   every time, so a Slurm job requeued on its time limit ran forever;
4. `--force` reruns it.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kill_and_resume import BASE, fail, run  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stale", required=True)
    a = ap.parse_args()
    stale = os.path.abspath(a.stale)
    with tempfile.TemporaryDirectory(prefix="stale-coupled-") as tmp:
        cfg = os.path.join(tmp, "coupled.toml")
        with open(cfg, "w") as f:
            f.write(BASE.format(method="pipedream", updates=1_000_000) + '[costs]\ncoupling = "gradient"\n')
        out = os.path.join(tmp, "coupled.h5")
        p = subprocess.Popen([stale, "run", cfg, "--out", out, "--quiet"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while not os.path.exists(out + ".partial") and p.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        if p.returncode != 128 + signal.SIGINT:
            fail(f"the interrupted coupled run: exit {p.returncode}, expected {128 + signal.SIGINT}: {err!r}")
        warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
        if len(warnings) != 1 or "writes no checkpoints" not in warnings[0] or "costs.coupling = gradient" not in warnings[0]:
            fail(f"no up-front warning naming costs.coupling: {err!r}")
        if "--resume" in err or "rerun it with --force" not in err:
            fail(f"the interrupt message promises a continuation: {err!r}")
        if not os.path.exists(out + ".partial"):
            fail("the interrupted run left no .partial")
        r = run(stale, "run", "--resume", out + ".partial", "--quiet", timeout=60)
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        if r.returncode != 2 or len(lines) != 1 or "kept no checkpoint" not in lines[0] or "--force" not in lines[0]:
            fail(f"--resume of a coupled run's .partial: exit {r.returncode}, {r.stderr!r}")
        r = run(stale, "run", cfg, "method.updates=3000", "--out", out, "--quiet", "--force", timeout=120)
        if r.returncode != 0 or not os.path.exists(out) or os.path.exists(out + ".partial"):
            fail(f"--force rerun: exit {r.returncode}, {r.stderr!r}")
    print("coupled costs: warned up front, no --resume promised, --resume refused in one line, --force reruns")


if __name__ == "__main__":
    main()
