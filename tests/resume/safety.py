#!/usr/bin/env python3
"""Nothing lost, nothing silently wrong (issue 34): real processes, registered with CTest.

  python3 tests/resume/safety.py --stale build/stale

1. One writer per run path and per sweep folder: a second `stale run --out` of a live run's
   path, a `--resume` of it and a second `stale sweep` of a live sweep's folder are refused
   in one line (exit 2) naming the path and the live process's pid, and the first writer
   finishes with every row; the lock file of a dead process is no lock.
2. Sweep grid points that resolve to the same run (unread = "drop" dropping delay.max, a
   literal duplicate step size, an axis over log.out) run once; the dry run says so, every
   index row of them names the same run file and the point it repeats (duplicate_of), and a
   rerun fails nothing.
3. A full disk (a small tmpfs; skipped where tmpfs cannot be mounted): one line naming the
   .partial and "disk full", exit 2 (never a signal), the .partial with its checkpoint kept,
   and `--resume` after space is freed gives the uninterrupted run's file bit for bit.
4. A damaged .partial: truncated to 100 bytes, `--resume`/`--continue` end within seconds in
   one line saying what is damaged and keep the file; iterate rows or a metrics chunk
   altered on disk are refused (the checkpoint's checksum of the rows), the file kept as is.
5. What a resume continues is checked: a changed data file, an edited stored config and a
   .partial of another stale version are refused in one line; `--force` continues and records
   resume_forced in the file; a plain rerun over a resumable .partial is refused (pointing at
   --resume and --force) instead of discarding its checkpoint.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kill_and_resume import config, fail, one_line_error, run, same_file, start, wait_for  # noqa: E402


def interrupted(stale, cfg, out):
    """a run stopped by SIGINT once it streams: OUT.partial with a checkpoint"""
    p = start(stale, "run", cfg, "--out", out, "--quiet")
    wait_for(out + ".partial", p)
    time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate()
    if p.returncode != 130:
        fail(f"SIGINT: exit {p.returncode} ({err.strip()})")
    return out + ".partial"


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def last_k(path):
    with h5py.File(path, "r") as f:
        status = f.attrs["status"]
        return int(f["metrics/k"][-1]), int(f["iterates_k"][-1]), status.decode() if isinstance(status, bytes) else status


def two_writers(stale, tmp):
    cfg = config(tmp, "rpd", 120000)
    out = os.path.join(tmp, "two.h5")
    p = start(stale, "run", cfg, "--out", out, "--quiet")
    wait_for(out + ".partial", p)
    line = one_line_error(run(stale, "run", cfg, "--out", out, "--quiet"), out, f"process {p.pid}")
    one_line_error(run(stale, "run", "--resume", out + ".partial", "--quiet"), f"process {p.pid}")
    one_line_error(run(stale, "run", cfg, "--out", out, "--force", "--quiet"), f"process {p.pid}")
    so, se = p.communicate()
    if p.returncode != 0 or "status=ok" not in so:
        fail(f"the first writer: exit {p.returncode}: {so} {se}")
    k, ik, status = last_k(out)
    if (k, ik) != (120000, 120000) or status != "ok":
        fail(f"the first writer's file ends at k = {k}, iterates at {ik}, status {status}")
    if os.path.exists(out + ".lock") or os.path.exists(out + ".partial"):
        fail("a finished run left its lock or .partial")
    print(f"two writers: the second refused ({line[:90]}…), the first finished with every row")

    # the lock file of a process that is gone (SIGKILL leaves it) is no lock
    stale_out = os.path.join(tmp, "stale_lock.h5")
    with open(stale_out + ".lock", "w") as f:
        f.write("999999\n")
    r = run(stale, "run", config(tmp, "pipedream", 300), "--out", stale_out, "--quiet")
    if r.returncode != 0 or os.path.exists(stale_out + ".lock"):
        fail(f"a dead process's lock file blocked the run: {r.stderr}")

    # two sweeps on one folder
    base = config(tmp, "pipedream", 40000)
    sweep = os.path.join(tmp, "two_sweeps.toml")
    with open(sweep, "w") as f:
        f.write(f'base = "{os.path.basename(base)}"\n[grid]\nseed = [1, 2]\n')
    d = os.path.join(tmp, "two_sweeps")
    p = start(stale, "sweep", sweep, "--out", d, "--jobs", "1", "--quiet")
    wait_for(os.path.join(d, ".sweep.lock"), p)
    one_line_error(run(stale, "sweep", sweep, "--out", d, "--quiet"), d, f"process {p.pid}")
    so, se = p.communicate()
    if p.returncode != 0:
        fail(f"the first sweep: exit {p.returncode}: {se}")
    with open(os.path.join(d, "index.csv")) as f:
        rows = list(csv.DictReader(f))
    if [r["status"] for r in rows] != ["ok", "ok"]:
        fail(f"the first sweep's index: {rows}")
    print("two sweeps: the second refused, the first finished both runs")


def duplicate_points(stale, tmp):
    base = config(tmp, "rpd", 300)
    sweep = os.path.join(tmp, "dups.toml")
    with open(sweep, "w") as f:
        f.write(f'base = "{os.path.basename(base)}"\nunread = "drop"\n[grid]\n'
                '"delay.name" = ["zero", "uniform"]\n"delay.max" = [8, 60]\n"method.lr" = [0.004, 0.004]\n'
                '"log.out" = ["a.h5", "b.h5"]\n')
    d = os.path.join(tmp, "dups")
    r = run(stale, "sweep", sweep, "--out", d, "--dry-run")
    if r.returncode != 0 or "3 runs in the grid (13 of its points the same run" not in r.stdout \
            or "(the same run as #0)" not in r.stdout:
        fail(f"dry run: exit {r.returncode}: {r.stdout} {r.stderr}")
    for attempt in range(2):  # the rerun finds every run done and fails nothing
        r = run(stale, "sweep", sweep, "--out", d, "--quiet")
        if r.returncode != 0:
            fail(f"sweep with duplicate points (attempt {attempt}): exit {r.returncode}: {r.stdout} {r.stderr}")
    with open(os.path.join(d, "index.csv")) as f:
        rows = list(csv.DictReader(f))
    if len(rows) != 16 or any(row["status"] != "ok" for row in rows):
        fail(f"index: {len(rows)} rows, statuses {[row['status'] for row in rows]}")
    zero = {row["path"] for row in rows if row["delay.name"] == "zero"}
    if len(zero) != 1 or len({row["path"] for row in rows}) != 3:
        fail(f"the index does not name one file per run: {sorted({row['path'] for row in rows})}")
    if len(os.listdir(os.path.join(d, "runs"))) != 3:
        fail(f"runs/: {sorted(os.listdir(os.path.join(d, 'runs')))}")
    # each repeated point names the first point of its run (duplicate_of); a first point none
    first = {}
    for row in rows:
        want = first.setdefault(row["path"], row["position"])
        if row["duplicate_of"] != ("" if want == row["position"] else want):
            fail(f"index row {row['position']}: duplicate_of {row['duplicate_of']!r}, the run's first point is {want}")
    print("duplicate grid points: 16 points, 3 runs, the dry run and the index say which")


def fill(path):
    """write every byte the disk has left, unbuffered: a buffered file would raise ENOSPC again
    when it closes (seen under ASan's slower runs in CI)"""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        chunk = b"\0" * 65536
        while True:
            try:
                if os.write(fd, chunk) == 0:
                    break
            except OSError:
                if len(chunk) == 1:
                    break
                chunk = chunk[: len(chunk) // 2]  # fill the last partial block too
    finally:
        os.close(fd)


def disk_full(stale, tmp):
    mnt = os.path.join(tmp, "small_disk")
    os.makedirs(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", mnt], capture_output=True).returncode != 0:
        print("disk full: skipped (cannot mount a tmpfs here)")
        return
    p = None
    try:
        # a run that ends within log.flush_seconds is written once, never as a .partial: this one
        # streams from its first 10 ms (and fits the 16 MiB disk twice, as the estimate asks)
        cfg = config(tmp, "rpd", 24000)
        stream = "log.flush_seconds=0.01"
        ref = os.path.join(tmp, "full_ref.h5")
        t = time.time()
        if run(stale, "run", cfg, stream, "--out", ref, "--quiet").returncode != 0:
            fail("reference run failed")
        duration = time.time() - t
        resumed = 0
        for trial, when in enumerate([0.0, 0.2, 0.4, 0.6]):
            out = os.path.join(mnt, f"full{trial}.h5")
            filler = os.path.join(mnt, "filler")
            p = start(stale, "run", cfg, stream, "--out", out, "--quiet")
            wait_for(out + ".partial", p)
            time.sleep(when * duration)
            fill(filler)
            so, se = p.communicate()
            if p.returncode == 0:
                os.remove(filler)
                os.remove(out)
                print(f"  disk full trial {trial}: the run finished before the disk filled")
                continue
            if p.returncode < 0:
                fail(f"disk full: killed by signal {-p.returncode}")
            line = one_line_error(subprocess.CompletedProcess([], p.returncode, so, se), "disk full", out + ".partial")
            os.remove(filler)
            if "nothing was kept" in line:
                # the disk filled before the first checkpoint was complete: nothing to resume
                if os.path.exists(out + ".partial"):
                    fail("disk full: says nothing was kept, but left a .partial")
                print(f"  disk full trial {trial}: one line, before the first checkpoint: nothing kept")
                continue
            if not os.path.exists(out + ".partial"):
                fail("disk full: the .partial was deleted")
            resumed += 1
            r = run(stale, "run", "--resume", out + ".partial", "--quiet")
            if r.returncode != 0:
                fail(f"resume after freeing space: exit {r.returncode}: {r.stderr}")
            why = same_file(ref, out)
            if why:
                fail(f"disk full trial {trial}: the resumed file differs: {why}")
            print(f"  disk full trial {trial}: one line, .partial kept, resumed bit-identical")
            os.remove(out)  # the next trial starts on an empty disk
        if resumed == 0:
            fail("disk full: no trial filled the disk after a checkpoint")
    finally:
        if p is not None and p.poll() is None:  # a failed check leaves a writer on the mount
            p.kill()
            p.wait()
        subprocess.run(["umount", mnt])
    print("disk full: one line, exit 2, the checkpoint kept, resumed bit-identical")


def damaged(stale, tmp, cfg, partial):
    def copy(name):
        dst = os.path.join(tmp, name + ".h5.partial")
        shutil.copyfile(partial, dst)
        return dst

    t = copy("trunc")
    with open(t, "r+b") as f:
        f.truncate(100)
    for args in (["run", "--resume", t], ["run", cfg, "--out", t[:-8], "--continue"], ["run", cfg, "--out", t[:-8]]):
        t0 = time.time()
        r = run(stale, *args, "--quiet", timeout=30)
        one_line_error(r, t, "damaged")
        if time.time() - t0 > 5 or os.path.getsize(t) != 100:
            fail(f"{args[1]} of a truncated .partial took {time.time() - t0:.1f} s or changed the file")
    r = run(stale, "run", cfg, "--out", t[:-8], "--force", "--quiet")
    if r.returncode != 0:
        fail(f"--force over a damaged .partial: {r.stderr}")

    for series in ["iterates", "metrics/loss"]:
        c = copy("bad_" + series.replace("/", "_"))
        with h5py.File(c, "r") as f:
            info = f[series].id.get_chunk_info(0)
        with open(c, "r+b") as f:
            f.seek(info.byte_offset + 24)
            data = f.read(16)
            f.seek(info.byte_offset + 24)
            f.write(bytes(b ^ 0x5A for b in data))
        before = sha(c)
        one_line_error(run(stale, "run", "--resume", c, "--quiet"), c, "damaged")
        if sha(c) != before:
            fail(f"the refused resume changed {c}")
    print("damaged .partial: truncated, altered iterates and metrics refused in one line, files kept")


def resume_checks(stale, tmp, cfg, partial):
    def copy(name):
        dst = os.path.join(tmp, name + ".h5.partial")
        shutil.copyfile(partial, dst)
        return dst

    # a plain rerun would discard the checkpoint
    out = partial[:-8]
    one_line_error(run(stale, "run", cfg, "--out", out, "--quiet"), "holds a checkpoint", "--resume", "--force")
    one_line_error(run(stale, "run", cfg, "method.lr=0.003", "--out", out, "--continue", "--quiet"),
                   "holds a checkpoint")
    if not os.path.exists(partial):
        fail("the refused rerun removed the .partial")

    c = copy("edited")
    with h5py.File(c, "r+") as f:
        text = f.attrs["config"]
        text = text.decode() if isinstance(text, bytes) else text
        f.attrs["config"] = text.replace("lr = 0.004", "lr = 0.005")
    one_line_error(run(stale, "run", "--resume", c, "--quiet"), c, "config was edited", "--force")
    r = run(stale, "run", "--resume", c, "--force", "--quiet")
    if r.returncode != 0:
        fail(f"--resume --force: {r.stderr}")
    with h5py.File(c[:-8], "r") as f:
        note = f.attrs.get("resume_forced", b"")
        note = note.decode() if isinstance(note, bytes) else note
        if "edited" not in note:
            fail(f"a forced resume is not recorded: {note!r}")

    v = copy("version")
    with h5py.File(v, "r+") as f:
        f.attrs["version"] = "0.0.1-other"
    one_line_error(run(stale, "run", "--resume", v, "--quiet"), "0.0.1-other")

    # the data a run reads changed under its checkpoint
    data = os.path.join(tmp, "data.libsvm")
    with open(data, "w") as f:
        for i in range(200):
            f.write(f"{1 if i % 3 else -1} 1:{(i % 7) / 7:.3f} 2:{(i % 5) / 5:.3f} 3:{(i % 11) / 11:.3f}\n")
    lcfg = os.path.join(tmp, "logistic.toml")
    with open(lcfg, "w") as f:
        f.write(f'seed = 1\nbackend = "cpu"\n[objective]\nname = "logistic"\ngenerator = "libsvm"\ndata = "{data}"\n'
                'stages = 2\nbatch_size = 4\n[method]\nname = "rpd"\nlr = 0.01\nupdates = 400000\n'
                '[delay]\nname = "uniform"\nmax = 4\n[log]\nevery = 50\nflush_seconds = 0.02\nprogress = false\n')
    lp = interrupted(stale, lcfg, os.path.join(tmp, "logistic.h5"))
    original = open(data).read()
    # a row more: another shape, which not even --force continues on (the checkpoint's
    # activations are one per sample; ASan found the forced resume reading past them)
    with open(data, "a") as f:
        f.write("1 1:0.5 2:0.5\n")
    one_line_error(run(stale, "run", "--resume", lp, "--quiet"), data, "changed since the checkpoint")
    one_line_error(run(stale, "run", "--resume", lp, "--force", "--quiet"), "the data's shape changed")
    # the same shape, other values: --force continues, and says so in the file
    with open(data, "w") as f:
        f.write(original.replace("1:0.000", "1:0.500", 1))
    one_line_error(run(stale, "run", "--resume", lp, "--quiet"), data, "changed since the checkpoint")
    r = run(stale, "run", "--resume", lp, "--force", "--quiet")
    if r.returncode != 0:
        fail(f"--resume --force on new data: {r.stderr}")
    with h5py.File(lp[:-8], "r") as f:
        note = f.attrs.get("resume_forced", b"")
        note = note.decode() if isinstance(note, bytes) else note
        if "data file" not in note:
            fail(f"the forced resume on new data is not recorded: {note!r}")
    print("resume checks: rerun, --continue of another config, edited config, other version, changed data refused;"
          " --force recorded")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stale", required=True)
    args = ap.parse_args()
    stale = os.path.abspath(args.stale)
    with tempfile.TemporaryDirectory(prefix="stale-safety-") as tmp:
        two_writers(stale, tmp)
        duplicate_points(stale, tmp)
        if os.geteuid() == 0:
            disk_full(stale, tmp)
        else:
            print("disk full: skipped (mounting a tmpfs needs root)")
        cfg = config(tmp, "rpd", 240000)
        partial = interrupted(stale, cfg, os.path.join(tmp, "stopped.h5"))
        damaged(stale, tmp, cfg, partial)
        resume_checks(stale, tmp, cfg, partial)
    print("safety: all checks passed")


if __name__ == "__main__":
    main()
