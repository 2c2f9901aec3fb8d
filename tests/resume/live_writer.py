#!/usr/bin/env python3
"""A live writer's .partial is never discarded; a reused pid is no writer (issue 54, item 9):
real processes, registered with CTest.

  python3 tests/resume/live_writer.py --stale build/stale

1. A long run writes RUN.h5.partial; its RUN.h5.lock is deleted (a cleanup script, a user).
   `stale run … --out RUN.h5 --force` then refuses in one line naming the live process (before,
   --force discarded the live run's file, and two processes wrote one run); so does --resume.
2. A .partial whose recorded writer pid now names another live `stale` process (pid reuse: here a
   process started after the file was written, its pid put into the file's writer_pid) is
   resumable: the file records its writer's identity (boot id and start time), which the newcomer
   does not have. Before, --resume refused it and advised killing the unrelated process.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kill_and_resume import config, fail, one_line_error, run, start, wait_for  # noqa: E402


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()


def live_writer(stale, tmp):
    cfg = config(tmp, "rpd", 50_000_000)  # runs until stopped (rpd: no schedule to plan first)
    out = os.path.join(tmp, "live.h5")
    p = start(stale, "run", cfg, "--out", out, "--quiet", "log.flush_seconds=0.05")
    try:
        wait_for(out + ".partial", p)
        time.sleep(0.3)  # past its first flush: the .partial holds rows
        os.remove(out + ".lock")
        try:  # a second writer would run as long as the first: it shows as a time-out
            r = run(stale, "run", cfg, "--out", out, "--quiet", "--force", timeout=20)
        except subprocess.TimeoutExpired:
            fail("--force over a live writer's .partial started a second writer (still running after 20 s)")
        one_line_error(r, out + ".partial", f"process {p.pid}", case="--force over a live writer's .partial")
        if p.poll() is not None or not os.path.exists(out + ".partial"):
            fail("the live writer or its .partial is gone after the refused --force")
        try:
            r = run(stale, "run", "--resume", out + ".partial", "--quiet", timeout=20)
        except subprocess.TimeoutExpired:
            fail("--resume of a live writer's .partial started a second writer (still running after 20 s)")
        one_line_error(r, f"process {p.pid}", case="--resume of a live writer's .partial")
    finally:
        stop(p)
    print("a live writer whose lock file was deleted: --force and --resume refused in one line, its file kept")
    return out


def reused_pid(stale, tmp, partial):
    # the interrupted run's file, its writer gone; a newcomer stale process takes its "pid"
    newcomer = start(stale, "run", config(tmp, "rpd", 50_000_000), "--out", os.path.join(tmp, "newcomer.h5"), "--quiet")
    try:
        wait_for(os.path.join(tmp, "newcomer.h5.partial"), newcomer)
        with h5py.File(partial, "r+") as f:
            if "writer_started" not in f.attrs:
                fail("the .partial does not record its writer's identity (writer_started)")
            f.attrs["writer_pid"] = newcomer.pid
        # the resumed run is long: it has resumed once it runs past its set-up; then it is stopped
        resumed = start(stale, "run", "--resume", partial, "--quiet")
        time.sleep(1.0)
        if resumed.poll() is not None:
            fail(f"a .partial whose pid now names another process: --resume exit {resumed.returncode}: "
                 f"{resumed.communicate()[1]!r}")
        stop(resumed)
        if resumed.returncode != 128 + signal.SIGINT:
            fail(f"the resumed run, stopped: exit {resumed.returncode} (expected {128 + signal.SIGINT})")
    finally:
        stop(newcomer)
    print("a reused pid: the .partial resumed (its writer's identity differs from the newcomer's)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stale", required=True)
    a = ap.parse_args()
    stale = os.path.abspath(a.stale)
    with tempfile.TemporaryDirectory(prefix="stale-live-writer-") as tmp:
        out = live_writer(stale, tmp)
        if not os.path.exists(out + ".partial"):
            fail("the stopped writer left no .partial")
        reused_pid(stale, tmp, out + ".partial")
    print("live_writer: every case held")


if __name__ == "__main__":
    main()
