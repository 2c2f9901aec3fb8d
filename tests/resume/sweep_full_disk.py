#!/usr/bin/env python3
"""A finished name only on a file that opens (issue 54): real processes, registered with CTest.

  python3 tests/resume/sweep_full_disk.py --stale build/stale

1. A sweep's rerun recomputes a run whose finished file does not open (one truncated by hand
   here: what an earlier version left when it renamed a file whose close had failed): it is
   kept as `HASH.h5.unreadable`, the run runs again, its new file opens, the others are skipped.
2. Lockstep ensembles on a filling disk (a small tmpfs at several sizes, --jobs 1 and 2; skipped
   without root): whatever fails, every file under a finished name opens and says so in the
   index; after the disk grows (remount), a rerun finishes every run, and every file opens.
"""
from __future__ import annotations

import argparse
import csv
import glob
import os
import subprocess
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kill_and_resume import config, fail, run  # noqa: E402


def opens(path) -> bool:
    try:
        with h5py.File(path, "r") as f:
            return "status" in f.attrs
    except OSError:
        return False


def sweep_file(tmp, name, seeds, updates):
    base = config(tmp, "pipedream", updates)
    path = os.path.join(tmp, name + ".toml")
    with open(path, "w") as f:
        f.write(f'base = "{os.path.basename(base)}"\n[grid]\nseed = {list(seeds)}\n')
    return path


def index_status(d):
    with open(os.path.join(d, "index.csv")) as f:
        return [row["status"] for row in csv.DictReader(f)]


def unreadable_rerun(stale, tmp):
    sweep = sweep_file(tmp, "rerun", [1, 2, 3], 300)
    d = os.path.join(tmp, "rerun")
    r = run(stale, "sweep", sweep, "--out", d, "--jobs", "1", "--quiet")
    if r.returncode != 0:
        fail(f"the first sweep: exit {r.returncode}: {r.stderr}")
    files = sorted(glob.glob(os.path.join(d, "runs", "*.h5")))
    victim = files[1]
    with open(victim, "r+b") as f:
        f.truncate(512)
    if opens(victim):
        fail("a file truncated to 512 bytes still opens: the case shows nothing")
    r = run(stale, "sweep", sweep, "--out", d, "--jobs", "1")
    if r.returncode != 0:
        fail(f"the rerun: exit {r.returncode}: {r.stderr}")
    if "1 ran, 2 skipped" not in r.stdout + r.stderr or "does not open as a run file" not in r.stderr:
        fail(f"the rerun did not run the unreadable file again: {r.stdout + r.stderr!r}")
    if not opens(victim) or not os.path.exists(victim + ".unreadable"):
        fail("the rerun's file does not open, or the unreadable one was not kept aside")
    if index_status(d) != ["ok"] * 3:
        fail(f"the rerun's index: {index_status(d)}")
    print("an unreadable finished file: kept aside as .unreadable and run again; the others skipped")


def filling_disk(stale, tmp):
    mnt = os.path.join(tmp, "small_disk")
    os.makedirs(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt], capture_output=True).returncode != 0:
        print("filling disk: skipped (cannot mount a tmpfs here)")
        return
    subprocess.run(["umount", mnt])
    sweep = sweep_file(tmp, "filling", [1, 2, 3, 4, 5, 6], 600)
    failed_somewhere = 0
    try:
        for jobs in ("1", "2"):
            for size in ("256k", "320k", "384k", "448k", "512k", "640k", "768k"):
                subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt], check=True)
                d = os.path.join(mnt, "s")
                r = run(stale, "sweep", sweep, "--out", d, "--ensemble", "3", "--jobs", jobs, "--quiet", timeout=120)
                if r.returncode < 0:
                    fail(f"{size}, --jobs {jobs}: killed by signal {-r.returncode}")
                for f in glob.glob(os.path.join(d, "runs", "*.h5")):
                    if not opens(f):
                        fail(f"{size}, --jobs {jobs}: {os.path.basename(f)} has a finished name but does not open "
                             f"(sweep: exit {r.returncode}, {r.stderr.strip()[-200:]!r})")
                failed_somewhere += r.returncode != 0
                subprocess.run(["mount", "-o", "remount,size=16m", mnt], check=True)
                r = run(stale, "sweep", sweep, "--out", d, "--ensemble", "3", "--jobs", jobs, "--quiet", timeout=120)
                if r.returncode != 0 or index_status(d) != ["ok"] * 6:
                    fail(f"{size}, --jobs {jobs}: the rerun after the disk grew: exit {r.returncode}, "
                         f"{index_status(d) if os.path.exists(os.path.join(d, 'index.csv')) else 'no index'}, "
                         f"{r.stderr.strip()[-300:]!r}")
                if not all(opens(f) for f in glob.glob(os.path.join(d, "runs", "*.h5"))):
                    fail(f"{size}, --jobs {jobs}: after the rerun a finished file does not open")
                subprocess.run(["umount", mnt], check=True)
    finally:
        subprocess.run(["umount", mnt], capture_output=True)
    if failed_somewhere == 0:
        fail("filling disk: no size filled the disk: the case shows nothing")
    print(f"filling disk: {failed_somewhere} of 14 sweeps met a full disk; every finished name opened, "
          "and every rerun after the disk grew finished all six runs")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stale", required=True)
    a = ap.parse_args()
    stale = os.path.abspath(a.stale)
    with tempfile.TemporaryDirectory(prefix="stale-full-disk-") as tmp:
        unreadable_rerun(stale, tmp)
        if os.geteuid() == 0:
            filling_disk(stale, tmp)
        else:
            print("filling disk: skipped (mounting a tmpfs needs root)")
    print("sweep_full_disk: every case held")


if __name__ == "__main__":
    main()
