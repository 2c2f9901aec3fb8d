#!/usr/bin/env python3
"""A finished name only on a file that opens (issue 54): real processes, registered with CTest.

  python3 tests/resume/sweep_full_disk.py --stale build/stale

1. A sweep's rerun recomputes a run whose finished file does not open (one truncated by hand
   here: what an earlier version left when it renamed a file whose close had failed): it is
   kept as `HASH.h5.unreadable`, the run runs again, its new file opens, the others are skipped.
2. Lockstep ensembles on a filling disk (a small tmpfs at several sizes, --jobs 1 and 2; skipped
   without root): whatever fails, every file under a finished name opens and says so in the
   index; after the disk grows (remount), a rerun finishes every run, and every file opens.
3. A disk that fills before a run's first flush (a 4 MiB tmpfs filled at 0.2 and 0.5 s, first flush
   at 1 s; skipped without root): one line saying disk full, exit 2, within 10 s (before, the run
   never ended and ignored SIGINT: HDF5 retried reading metadata the full disk kept from being
   written).
"""
from __future__ import annotations

import argparse
import csv
import glob
import os
import subprocess
import sys
import tempfile
import time

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


def fills_before_first_flush(stale, tmp):
    """a 4 MiB disk filled at 0.2 and 0.5 s of a run whose first flush is at 1 s: before, the
    run never exited (HDF5 retried reading metadata that was never written) and ignored SIGINT"""
    mnt = os.path.join(tmp, "tiny_disk")
    os.makedirs(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt], capture_output=True).returncode != 0:
        print("a disk full before the first flush: skipped (cannot mount a tmpfs here)")
        return
    cfg = config(tmp, "rpd", 3_000_000)
    keys = ["log.every=30000", "log.iterates_every=0", "log.delays=false", "log.flush_seconds=1"]
    try:
        for when in (0.2, 0.5):
            for name in os.listdir(mnt):
                os.remove(os.path.join(mnt, name))
            out = os.path.join(mnt, "r.h5")
            p = subprocess.Popen([stale, "run", cfg, *keys, "--out", out, "--quiet"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            time.sleep(when)
            with open(os.path.join(mnt, "fill"), "wb") as f:
                try:
                    while True:
                        f.write(b"\0" * 65536)
                except OSError:
                    pass
            filled = time.time()
            try:
                _, err = p.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                fail(f"a disk full at {when} s, before the first flush: the run still runs 10 s later")
            lines = [line for line in err.splitlines() if line.strip()]
            if p.returncode != 2 or len(lines) != 1 or "disk full" not in lines[0]:
                fail(f"a disk full at {when} s: exit {p.returncode}, {err!r}")
            print(f"  disk full at {when} s, before the first flush: one line, exit 2, "
                  f"{time.time() - filled:.1f} s after the fill")
    finally:
        subprocess.run(["umount", mnt], capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stale", required=True)
    a = ap.parse_args()
    stale = os.path.abspath(a.stale)
    with tempfile.TemporaryDirectory(prefix="stale-full-disk-") as tmp:
        unreadable_rerun(stale, tmp)
        if os.geteuid() == 0:
            filling_disk(stale, tmp)
            fills_before_first_flush(stale, tmp)
        else:
            print("filling disk: skipped (mounting a tmpfs needs root)")
    print("sweep_full_disk: every case held")


if __name__ == "__main__":
    main()
