#!/usr/bin/env python3
"""Runs with coupled costs checkpoint and resume bit for bit (issue 54, item 2): real processes,
registered with CTest.

  python3 tests/resume/coupled.py --stale build/stale

A run whose op durations follow its own state (costs.coupling = data | gradient | weight) made its
timeline as it went and wrote no checkpoint: SIGKILL lost everything, and `--resume` started over
from k = 0 (a Slurm job requeued on its time limit never ended). Its checkpoint now holds the
coupling factor of every op done and what the state costs learnt (first gradient norms, latest
factors), and a resume replays those durations before it runs on. For each coupling, a run
stopped by SIGINT and one killed by SIGKILL (after a checkpoint) resume to the uninterrupted run's
file, every dataset and attribute but wall-clock values equal bit for bit.
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
from kill_and_resume import BASE, checkpoint_k, fail, run, same_file  # noqa: E402

UPDATES = 150_000


def stopped(stale, cfg, out, sig, after):
    """the run stopped by `sig` `after` seconds past its first flush; its .partial"""
    p = subprocess.Popen([stale, "run", cfg, "--out", out, "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    # past its first checkpoint (a slow build, ASan, takes longer to write one), then a while more
    deadline = time.time() + 120
    while (not os.path.exists(out + ".partial") or not checkpoint_k(out + ".partial")) and p.poll() is None \
            and time.time() < deadline:
        time.sleep(0.005)
    time.sleep(after)
    if p.poll() is not None:
        fail(f"the run ended before it could be stopped ({UPDATES} updates too few?)")
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    if sig == signal.SIGINT and p.returncode != 128 + signal.SIGINT:
        fail(f"SIGINT: exit {p.returncode}: {err!r}")
    return out + ".partial"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stale", required=True)
    a = ap.parse_args()
    stale = os.path.abspath(a.stale)
    with tempfile.TemporaryDirectory(prefix="stale-coupled-") as tmp:
        for coupling in ("data", "gradient", "weight"):
            cfg = os.path.join(tmp, f"{coupling}.toml")
            with open(cfg, "w") as f:
                f.write(BASE.format(method="pipedream", updates=UPDATES) +
                        f'[costs]\ncoupling = "{coupling}"\ncoupling_scale = 1.0\njitter = 0.1\n')
            ref = os.path.join(tmp, f"{coupling}_ref.h5")
            r = run(stale, "run", cfg, "--out", ref, "--quiet", timeout=300)
            if r.returncode != 0:
                fail(f"{coupling}: the uninterrupted run: {r.stderr!r}")
            for sig in (signal.SIGINT, signal.SIGKILL):
                out = os.path.join(tmp, f"{coupling}_{sig.name}.h5")
                partial = stopped(stale, cfg, out, sig, 0.2)
                k = checkpoint_k(partial)
                if not k:
                    fail(f"{coupling}, {sig.name}: the .partial holds no checkpoint")
                r = run(stale, "run", "--resume", partial, "--quiet", timeout=300)
                if r.returncode != 0:
                    fail(f"{coupling}, {sig.name}: --resume: exit {r.returncode}: {r.stderr!r}")
                why = same_file(ref, out)
                if why:
                    fail(f"{coupling}, {sig.name}: the resumed run (from k = {k}) differs from the uninterrupted one: {why}")
                print(f"{coupling}, {sig.name} at k = {k}: resumed bit-identical")
    print("coupled costs: every stopped and killed run resumed bit-identical")


if __name__ == "__main__":
    main()
