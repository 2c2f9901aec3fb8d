#!/usr/bin/env python3
"""What a failure says and leaves (issue 54, item 10): real processes, registered with CTest.

  python3 tests/resume/leftovers.py --stale build/stale

1. A .partial truncated at 8 points (from 25 % to 99.9 % of its size): `--resume` says "damaged"
   in one line (before, some cuts read as "not a resumable run file … a finished run needs no
   resume") and keeps the file as it is.
2. `stale schedule … --trace DIR` with DIR a folder: one line naming it, and no DIR.partial left.
3. `--out nope/../r.h5`: the run writes r.h5 and leaves no folder `nope` behind, finished or
   refused.
4. A finished RUN.h5 with a leftover RUN.h5.partial beside it: a rerun is refused in one line that
   does not advise `--resume` (which would refuse: the run finished).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kill_and_resume import config, fail, one_line_error, run, start, wait_for  # noqa: E402


def truncated(stale, tmp):
    cfg = config(tmp, "rpd", 2_000_000)
    out = os.path.join(tmp, "cut.h5")
    p = start(stale, "run", cfg, "--out", out, "--quiet", "log.flush_seconds=0.05")
    wait_for(out + ".partial", p, timeout=60)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=60)
    whole = out + ".partial"
    size = os.path.getsize(whole)
    for frac in (0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 0.99, 0.999):
        cut = os.path.join(tmp, f"cut{frac}.h5.partial")
        shutil.copyfile(whole, cut)
        with open(cut, "r+b") as f:
            f.truncate(int(size * frac))
        before = hashlib.sha256(open(cut, "rb").read()).hexdigest()
        r = run(stale, "run", "--resume", cut, "--quiet", timeout=60)
        one_line_error(r, cut, "damaged", case=f"a .partial cut at {frac:.1%} of {size} bytes")
        if hashlib.sha256(open(cut, "rb").read()).hexdigest() != before:
            fail(f"the .partial cut at {frac:.1%} was changed by the refused resume")
    print(f"a .partial truncated at 8 points of its {size} bytes: 'damaged' in one line, the file kept")


def trace_folder(stale, tmp):
    d = os.path.join(tmp, "DIR")
    os.makedirs(d)
    r = run(stale, "schedule", "pipedream", "--stages", "4", "--microbatches", "8", "--trace", d)
    one_line_error(r, d, "is a directory", case="--trace naming a folder")
    if os.path.exists(d + ".partial"):
        fail("--trace naming a folder left DIR.partial behind")
    print("--trace naming a folder: one line, nothing left behind")


def dot_dot_out(stale, tmp):
    cfg = config(tmp, "pipedream", 300)
    work = os.path.join(tmp, "dotdot")
    os.makedirs(work)
    r = run(stale, "run", cfg, "--out", "nope/../r.h5", "--quiet", cwd=work)
    if r.returncode != 0 or not os.path.exists(os.path.join(work, "r.h5")):
        fail(f"--out nope/../r.h5: exit {r.returncode}, {r.stderr!r}")
    r = run(stale, "run", cfg, "method.lr=-1", "--out", "a/b/../c/r.h5", "--quiet", cwd=work)
    if r.returncode != 2:
        fail(f"a refused run: exit {r.returncode}, {r.stderr!r}")
    left = sorted(os.listdir(work))
    if left != ["r.h5"]:
        fail(f"--out through '..' left {left} in the folder (expected only r.h5)")
    print("--out through '..': the run's file only, no folder left behind")


def leftover_beside_finished(stale, tmp):
    """a finished RUN.h5 with a leftover RUN.h5.partial beside it (another run's checkpoint copied
    there): the refusal must not advise the --resume that then refuses ("the run already finished")"""
    cfg = config(tmp, "rpd", 300)
    out = os.path.join(tmp, "fin.h5")
    if run(stale, "run", cfg, "--out", out, "--quiet").returncode != 0:
        fail("the finished run")
    shutil.copyfile(os.path.join(tmp, "cut.h5.partial"), out + ".partial")  # truncated() left it, interrupted
    r = run(stale, "run", cfg, "--out", out, "--quiet")
    one_line_error(r, out + ".partial", "leftover checkpoint", "--force", case="a rerun beside a leftover .partial")
    if "stale run --resume" in r.stderr:
        fail(f"the advice points at a resume that refuses: {r.stderr!r}")
    print("a leftover .partial beside a finished run: one line, no --resume advised")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stale", required=True)
    a = ap.parse_args()
    stale = os.path.abspath(a.stale)
    with tempfile.TemporaryDirectory(prefix="stale-leftovers-") as tmp:
        truncated(stale, tmp)
        leftover_beside_finished(stale, tmp)
        trace_folder(stale, tmp)
        dot_dot_out(stale, tmp)
    print("leftovers: every case held")


if __name__ == "__main__":
    main()
