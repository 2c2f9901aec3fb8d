#!/usr/bin/env python3
"""Real processes killed and interrupted (issue 12), registered with CTest.

  python3 tests/resume/kill_and_resume.py --stale build/stale [--kills 20] [--seed 1]

1. SIGKILL at `--kills` random moments (seeded) of runs of rpd and pipedream (every third
   trial paci or localsgd): every RUN.h5.partial left opens with h5py (swmr=True: the
   file was held in SWMR mode), every dataset's extent matches its data, and
   `stale run --resume` of each gives the uninterrupted run's file, bit for bit but for
   wall-clock values.
2. SIGINT → exit 130, a .partial that opens as it is with status "interrupted", resumable
   to the same file; SIGTERM → exit 143, likewise.
3. A live .partial read by h5py while the run writes (issue 13): SWMR read, consistent rows.
4. `stale sweep` stopped by SIGINT → exit 130, index.csv consistent; run again, it resumes
   the interrupted runs and its files equal an uninterrupted sweep's.
5. An ensemble sweep (--ensemble 4: four step sizes of logistic regression advancing as one
   lockstep ensemble, rpd and pipedream) killed by SIGKILL at a random moment after its
   columns checkpointed, then run again: the columns continue from their checkpoints as one
   ensemble (each file keeps the killed run's start time) and every file equals the
   uninterrupted sweep's bit for bit. Logistic regression, so that a column continued alone
   (a one-column ensemble sums its gradient in another order) would show in the last bits.
Total time is bounded (about 1.5 min on 2 cores): runs are small and flush every 20 ms; the
killed runs are long enough (120,000 updates, ~0.7 s) that most kills land after the first flush
(at 24,000 updates a run took ~0.04 s and 0–2 of the 20 kills found a .partial).
"""
from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

BASE = """
seed = 4
backend = "cpu"
[objective]
name = "quadratic"
generator = "random"
dim = 48
samples = 120
batch_size = 6
stages = 4
[method]
name = "{method}"
lr = 0.004
updates = {updates}
[log]
every = 3
flush_seconds = 0.02
progress = false
"""
RPD_DELAY = '[delay]\nname = "uniform"\nmax = 12\n'
WALL = {"metrics/wall"}
ROOT_WALL_ATTRS = {"started", "ended", "wall_seconds", "message"}


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def config(tmp, method, updates):
    text = BASE.format(method=method, updates=updates) + (RPD_DELAY if method == "rpd" else "")
    path = os.path.join(tmp, f"{method}.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def datasets(f):
    out = {}
    f.visititems(lambda name, obj: out.__setitem__(name, obj) if isinstance(obj, h5py.Dataset) else None)
    return out


def same_file(a, b):
    """every dataset and attribute but wall-clock values, bit for bit"""
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        da, db = datasets(fa), datasets(fb)
        if set(da) != set(db):
            return f"datasets differ: {sorted(set(da) ^ set(db))}"
        for name in da:
            if name in WALL:
                continue
            x, y = da[name][()], db[name][()]
            if x.shape != y.shape or x.dtype != y.dtype or x.tobytes() != y.tobytes():
                return f"{name} differs"
        for group in ["/", "objective", "theory", "schedule", "delay_summary"]:
            if group not in fa:
                continue
            aa, ab = dict(fa[group].attrs), dict(fb[group].attrs)
            skip = ROOT_WALL_ATTRS if group == "/" else set()
            for k in set(aa) | set(ab):
                if k in skip:
                    continue
                if k not in aa or k not in ab or np.asarray(aa[k]).tobytes() != np.asarray(ab[k]).tobytes():
                    return f"attribute {group}:{k} differs"
    return None


def check_partial(path):
    """a killed run's .partial: opens (SWMR read), every chunk of every dataset decodes, rows in
    order. (Series are appended one after another: a kill inside a flush may leave one series
    a flush longer than the next; each extent matches its own data.)"""
    try:
        f = h5py.File(path, "r", swmr=True)
    except OSError:
        f = h5py.File(path, "r")  # closed cleanly (interrupted, or killed while leaving SWMR mode)
    with f:
        for name, d in datasets(f).items():
            d[()]  # every chunk decodes ("filter returned failure" would raise here)
        k = f["metrics/k"][()]
        n = len(k)
        if n and (k[0] != 0 or np.any(np.diff(k) <= 0)):
            return "metrics/k is not increasing from 0"
    return None


def one_line_error(r, *needles, code=2, case=""):
    """r ended with exit `code` and exactly one line on stderr, "error: …", holding every needle;
    its line. `case` names the check in the failure message."""
    where = f"{case}: " if case else ""
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    if r.returncode != code or len(lines) != 1 or not lines[0].startswith("error: "):
        fail(f"{where}expected one error line and exit {code}, got exit {r.returncode}: {r.stderr!r}")
    for n in needles:
        if n not in lines[0]:
            fail(f"{where}error line lacks {n!r}: {lines[0]}")
    return lines[0]


def start(stale, *args):
    return subprocess.Popen([stale, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(path, p, timeout=30):
    """until `path` exists (or the process p ended, or timeout seconds); fails if it never did"""
    deadline = time.time() + timeout
    while not os.path.exists(path) and p.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    if not os.path.exists(path):
        fail(f"{path} did not appear (exit {p.poll()})")


def run(stale, *args, **kw):
    return subprocess.run([stale, *args], capture_output=True, text=True, **kw)


def resume(stale, partial):
    r = run(stale, "run", "--resume", partial, "--quiet")
    if r.returncode != 0:
        fail(f"--resume {partial}: exit {r.returncode}: {r.stderr.strip()}")


def kill_trials(stale, tmp, kills, rng):
    methods = ["rpd", "pipedream"]
    updates = 120000  # long enough that most kills land after the first flush (0.02 s)
    refs, durations = {}, {}
    for m in methods + ["paci", "localsgd"]:
        cfg = config(tmp, m, updates)
        ref = os.path.join(tmp, f"ref-{m}.h5")
        t = time.time()
        r = run(stale, "run", cfg, "--out", ref, "--quiet")
        durations[m] = time.time() - t
        if r.returncode != 0:
            fail(f"{m}: exit {r.returncode}: {r.stderr.strip()}")
        refs[m] = (cfg, ref)
    if os.environ.get("STALE_KILL_VERBOSE"):
        print("  uninterrupted runs (s): " + ", ".join(f"{m} {t:.2f}" for m, t in durations.items()))
    opened = resumed = 0
    for i in range(kills):
        m = ["rpd", "pipedream", "rpd", "pipedream", "paci", "localsgd"][i % 6]
        cfg, ref = refs[m]
        out = os.path.join(tmp, f"kill{i}.h5")
        p = subprocess.Popen([stale, "run", cfg, "--out", out, "--quiet"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        killed_at = rng.uniform(0.02, 0.95) * durations[m]
        time.sleep(killed_at)
        p.send_signal(signal.SIGKILL)
        p.wait()
        partial = out + ".partial"
        if not os.path.exists(partial):
            # finished before the kill, or killed before the run file existed or while its
            # header was written (only PATH.partial.new): a rerun starts afresh
            continue
        why = check_partial(partial)
        if why:
            fail(f"trial {i} ({m}): {partial}: {why}")
        opened += 1
        t = time.time()
        resume(stale, partial)
        if os.environ.get("STALE_KILL_VERBOSE"):
            print(f"  trial {i} {m}: killed after {killed_at:.2f} s, resumed in {time.time() - t:.2f} s")
        why = same_file(ref, out)
        if why:
            fail(f"trial {i} ({m}): resumed file differs from the uninterrupted run: {why}")
        resumed += 1
    print(f"SIGKILL: {kills} kills, {opened} .partial files opened, {resumed} resumed bit-identical")


def signal_trials(stale, tmp):
    for sig, code in [(signal.SIGINT, 130), (signal.SIGTERM, 143)]:
        # long enough that the signal always lands inside the run (a fixed sleep raced a fast
        # machine: the run had finished before it), sent once the run file streams
        cfg = config(tmp, "pipedream" if sig == signal.SIGTERM else "rpd", 240000)
        ref = os.path.join(tmp, f"sigref{code}.h5")
        if run(stale, "run", cfg, "--out", ref, "--quiet").returncode != 0:
            fail("reference run failed")
        out = os.path.join(tmp, f"sig{code}.h5")
        p = subprocess.Popen([stale, "run", cfg, "--out", out, "--quiet"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 20
        while not os.path.exists(out + ".partial") and p.poll() is None and time.time() < deadline:
            time.sleep(0.005)
        time.sleep(0.05)
        p.send_signal(sig)
        _, err = p.communicate()
        if p.returncode != code:
            fail(f"signal {sig.name}: exit {p.returncode}, expected {code} ({err.strip()})")
        with h5py.File(out + ".partial", "r") as f:  # closed cleanly: no SWMR needed
            status = f.attrs["status"]
            status = status.decode() if isinstance(status, bytes) else status
            if status != "interrupted":
                fail(f"signal {sig.name}: status {status!r}")
        resume(stale, out + ".partial")
        why = same_file(ref, out)
        if why:
            fail(f"signal {sig.name}: resumed file differs: {why}")
        print(f"{sig.name}: exit {code}, status interrupted, resumed bit-identical")


def live_read(stale, tmp):
    cfg = config(tmp, "rpd", 200000)
    out = os.path.join(tmp, "live.h5")
    p = subprocess.Popen([stale, "run", cfg, "--out", out, "--quiet"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while not os.path.exists(out + ".partial") and time.time() < deadline:
            time.sleep(0.02)
        rows = []
        for _ in range(3):
            time.sleep(0.2)
            with h5py.File(out + ".partial", "r", swmr=True) as f:
                k = f["metrics/k"][()]
                loss = f["metrics/loss"][()]
                if len(loss) < len(k) or (len(k) and np.any(np.diff(k) <= 0)):
                    fail("live read: inconsistent series")
                rows.append(len(k))
        if p.poll() is not None:
            fail("live read: the run ended before it could be read live; make it longer")
        if rows[-1] <= rows[0]:
            fail(f"live read: rows did not grow while the run wrote ({rows})")
        # a second writer is refused while the first one lives
        r = run(stale, "run", "--resume", out + ".partial", "--quiet")
        if r.returncode != 2 or "still being written" not in r.stderr:
            fail(f"--resume of a live run: exit {r.returncode} ({r.stderr.strip()})")
        print(f"live read: {rows} rows seen while the run wrote; --resume of it refused")
    finally:
        p.send_signal(signal.SIGINT)
        p.wait()


def sweep_trial(stale, tmp):
    cfg = config(tmp, "rpd", 240000)
    sw = os.path.join(tmp, "sweep.toml")
    with open(sw, "w") as f:
        f.write(f'base = "{os.path.basename(cfg)}"\n[grid]\n"method.lr" = [0.002, 0.003, 0.004, 0.005]\n')
    ref = run(stale, "sweep", sw, "--quiet", "--jobs", "2", "--out", os.path.join(tmp, "sw-ref"))
    if ref.returncode != 0:
        fail(f"sweep: {ref.stderr.strip()}")
    out = os.path.join(tmp, "sw")
    p = subprocess.Popen([stale, "sweep", sw, "--quiet", "--jobs", "2", "--out", out], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    # signalled once its runs stream (a fixed sleep would race a fast machine)
    runs = os.path.join(out, "runs")
    deadline = time.time() + 20
    while p.poll() is None and time.time() < deadline and not (
            os.path.isdir(runs) and any(n.endswith(".partial") for n in os.listdir(runs))):
        time.sleep(0.005)
    time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate()
    if p.returncode != 130:
        fail(f"sweep SIGINT: exit {p.returncode} ({err.strip()})")
    runs = os.path.join(out, "runs")
    partials = [f for f in os.listdir(runs) if f.endswith(".partial")]
    done = [f for f in os.listdir(runs) if f.endswith(".h5")]
    with open(os.path.join(out, "index.csv")) as f:
        lines = [line for line in f.read().splitlines()[1:] if line.strip()]
    ok_rows = sum(",ok," in line for line in lines)
    if ok_rows != len(done):
        fail(f"sweep SIGINT: index.csv has {ok_rows} finished rows for {len(done)} run files")
    again = run(stale, "sweep", sw, "--quiet", "--jobs", "2", "--out", out)
    if again.returncode != 0:
        fail(f"sweep resume: {again.stderr.strip()}")
    for name in os.listdir(os.path.join(tmp, "sw-ref", "runs")):
        why = same_file(os.path.join(tmp, "sw-ref", "runs", name), os.path.join(runs, name))
        if why:
            fail(f"sweep resume: {name}: {why}")
    print(f"sweep SIGINT: exit 130, {len(done)} finished and {len(partials)} interrupted runs, index consistent; "
          "resumed sweep equals the uninterrupted one")


def checkpoint_k(path):
    """k of the valid checkpoint of a .partial (None: none yet, or not readable now)"""
    try:
        try:
            f = h5py.File(path, "r", swmr=True)
        except OSError:
            f = h5py.File(path, "r")
        with f:
            if "checkpoint/index" not in f:
                return None
            valid, _, _, k = (int(v) for v in f["checkpoint/index"][()])
            return k if valid else None
    except (OSError, KeyError, ValueError):
        return None


def started(path):
    try:
        f = h5py.File(path, "r", swmr=True)  # a killed run's .partial was held in SWMR mode
    except OSError:
        f = h5py.File(path, "r")
    with f:
        s = f.attrs["started"]
        return s.decode() if isinstance(s, bytes) else s


def ensemble_kill_trial(stale, tmp, rng):
    lrs = [0.002, 0.003, 0.004, 0.005]
    for method in ("rpd", "pipedream"):
        text = BASE.format(method=method, updates=120000).replace(
            'name = "quadratic"\ngenerator = "random"', 'name = "logistic"\ngenerator = "synthetic"')
        cfg = os.path.join(tmp, f"ens-{method}.toml")
        with open(cfg, "w") as f:
            f.write(text + (RPD_DELAY if method == "rpd" else ""))
        sw = os.path.join(tmp, f"ens-{method}-sweep.toml")
        with open(sw, "w") as f:
            f.write(f'base = "{os.path.basename(cfg)}"\n[grid]\n"method.lr" = {lrs}\n')
        args = ["sweep", sw, "--quiet", "--jobs", "1", "--ensemble", str(len(lrs))]
        ref_dir, out = os.path.join(tmp, f"ens-{method}-ref"), os.path.join(tmp, f"ens-{method}")
        # the constants cache warm for both sweeps: a cached f_* says so in /theory/f_star_method
        run(stale, "run", cfg, "--quiet", "--out", os.path.join(tmp, f"ens-{method}-warm.h5"), "method.updates=1")
        t = time.time()
        ref = run(stale, *args, "--out", ref_dir)
        if ref.returncode != 0:
            fail(f"ensemble sweep ({method}): {ref.stderr.strip()}")
        duration = time.time() - t
        p = subprocess.Popen([stale, *args, "--out", out], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # killed at a random moment once every column holds a checkpoint (before that a rerun
        # starts afresh, which the sweep trial above covers)
        runs = os.path.join(out, "runs")
        deadline = time.time() + 60
        while p.poll() is None and time.time() < deadline:
            partials = [os.path.join(runs, n) for n in os.listdir(runs)] if os.path.isdir(runs) else []
            partials = [n for n in partials if n.endswith(".partial")]
            if len(partials) == len(lrs) and all(checkpoint_k(n) for n in partials):
                break
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.3) * duration)
        p.send_signal(signal.SIGKILL)
        p.wait()
        partials = sorted(os.path.join(runs, n) for n in os.listdir(runs) if n.endswith(".partial"))
        if len(partials) != len(lrs):
            fail(f"ensemble sweep ({method}): {len(partials)} .partial files after the kill, expected {len(lrs)} "
                 "(the sweep finished before it: make it longer)")
        for n in partials:
            why = check_partial(n)
            if why:
                fail(f"ensemble sweep ({method}): {n}: {why}")
        ks = {checkpoint_k(n) for n in partials}
        starts = {n[:-len(".partial")]: started(n) for n in partials}
        time.sleep(1.1)  # a run started afresh now would carry another start time
        again = run(stale, *args, "--out", out)
        if again.returncode != 0:
            fail(f"ensemble sweep resume ({method}): {again.stderr.strip()}")
        for name in os.listdir(os.path.join(ref_dir, "runs")):
            why = same_file(os.path.join(ref_dir, "runs", name), os.path.join(runs, name))
            if why:
                fail(f"ensemble sweep resume ({method}): {name}: {why}")
        continued = all(started(path) == s for path, s in starts.items())
        if len(ks) == 1 and not continued:
            fail(f"ensemble sweep resume ({method}): every column held a checkpoint at k = {ks.pop()}, "
                 "but the ensemble ran afresh")
        how = (f"continued from one checkpoint at k = {ks.pop()}" if continued else
               f"killed between two columns' checkpoints (k = {sorted(ks)}): ran afresh")
        print(f"ensemble sweep SIGKILL ({method}, {len(lrs)} columns): {how}; files equal the uninterrupted sweep's")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stale", required=True)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="stale-kill-") as tmp:
        os.environ["STALE_CACHE_DIR"] = os.path.join(tmp, "cache")
        kill_trials(a.stale, tmp, a.kills, rng)
        signal_trials(a.stale, tmp)
        live_read(a.stale, tmp)
        sweep_trial(a.stale, tmp)
        ensemble_kill_trial(a.stale, tmp, rng)
    print(f"kill_and_resume: all checks passed in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
