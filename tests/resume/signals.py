#!/usr/bin/env python3
"""Every signal ends a process within a second, whatever it is waiting on (issue 34): real
processes, registered with CTest.

  python3 tests/resume/signals.py --stale build/stale [--limit 1.0]

SIGINT, SIGTERM and SIGHUP, each sent to
  (a) a streaming `stale run`,
  (b) `stale sweep --jobs 2` (two worker threads, each in a run),
  (c) `stale sweep --jobs 2 --isolate` (two `stale run` children): to the sweep alone, as
      `kill` does, and to its whole process group, as Ctrl-C in a terminal does,
  (d) a `stale run` still in its set-up (the constants of a large logistic problem: a damped
      Newton solve and an eigenvalue iteration, seconds of work before the first update),
  (e) an in-process sweep whose two workers are in such set-ups,
and SIGKILL to the --isolate sweep (its children are told by the kernel, PR_SET_PDEATHSIG).
Each process must exit within --limit seconds of the signal (the time is measured to the
last of its processes, children included, and the maximum printed), with exit code 128 +
the signal, keep a .partial with a checkpoint and status "interrupted" for every run it had
started streaming, and leave no process and no lock file behind. There are no other waits: a second writer
of a run path or sweep folder is refused at once (flock with LOCK_NB), and a damaged
.partial's reads are retried a bounded number of times (tests/resume/safety.py).
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
from kill_and_resume import config, fail  # noqa: E402

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
PROBLEMS = []


def problem(msg):
    """a failed check: reported with every other at the end (each case is independent)"""
    print("FAIL: " + msg, file=sys.stderr)
    PROBLEMS.append(msg)


def processes_with(needle: str) -> list[int]:
    """pids of live (not zombie) processes whose command line contains `needle`"""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{name}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in cmd and state != "Z" and int(name) != os.getpid():
            out.append(int(name))
    return out


def check_partial(path: str, what: str, checkpoint: bool = True):
    """a .partial closed by an interrupt: opens plainly, status interrupted, a checkpoint (a run
    stopped before its first update has none: its resume starts afresh)"""
    try:
        with h5py.File(path, "r") as f:
            status = f.attrs["status"]
            status = status.decode() if isinstance(status, bytes) else status
            index = f["checkpoint/index"][()]
    except OSError as e:
        problem(f"{what}: {path} does not open as a closed file ({e}): the run was killed, not interrupted")
        return
    if status != "interrupted":
        problem(f"{what}: {path} has status {status!r}")
    if checkpoint and index[0] != 1:
        problem(f"{what}: {path} holds no checkpoint")


def stop(p: subprocess.Popen, sig, needle: str, group: bool = False) -> float:
    """sends `sig` (to the process group when `group`), returns the seconds until `p` and
    every process whose command line holds `needle` are gone"""
    t0 = time.monotonic()
    if group:
        os.killpg(p.pid, sig)
    else:
        p.send_signal(sig)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        problem(f"{needle}: still running 30 s after {signal.Signals(sig).name}")
    deadline = t0 + 30
    while processes_with(needle) and time.monotonic() < deadline:
        time.sleep(0.002)
    left = processes_with(needle)
    if left:
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        problem(f"{needle}: processes {left} still running 30 s after {signal.Signals(sig).name}")
    return time.monotonic() - t0


def wait_streaming(p: subprocess.Popen, folder: str, count: int, what: str):
    """until `count` .partial files exist in `folder` (the runs stream and checkpoint)"""
    deadline = time.time() + 60
    while time.time() < deadline and p.poll() is None:
        if os.path.isdir(folder) and sum(n.endswith(".partial") for n in os.listdir(folder)) >= count:
            time.sleep(0.1)
            return
        time.sleep(0.005)
    fail(f"{what}: the runs did not stream (exit {p.poll()})")


def start(args, new_group=False):
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=new_group)


def expect_code(p, sig, what):
    err = p.stderr.read()
    if p.returncode != 128 + sig:
        problem(f"{what}: exit {p.returncode}, expected {128 + sig} ({err.strip()})")


def one_run(stale, tmp, sig, limit, times):
    cfg = config(tmp, "rpd", 2_000_000)
    # a folder of its own: the earlier signals' .partial files must not count as this run streaming
    # (under ASan on a loaded machine SIGTERM once arrived before this run's first checkpoint)
    folder = os.path.join(tmp, f"run-{sig.name}")
    os.makedirs(folder)
    out = os.path.join(folder, "run.h5")
    p = start([stale, "run", cfg, "--out", out, "--quiet"])
    wait_streaming(p, folder, 1, f"run {sig.name}")
    dt = stop(p, sig, out)
    expect_code(p, sig, f"run {sig.name}")
    check_partial(out + ".partial", f"run {sig.name}")
    if os.path.exists(out + ".lock"):
        problem(f"run {sig.name}: the run's lock file was left")
    times.append((f"run, {sig.name}", dt))


def sweep(stale, tmp, sig, limit, times, isolate=False, group=False):
    base = config(tmp, "rpd", 2_000_000)
    name = f"sweep-{sig.name}{'-isolate' if isolate else ''}{'-group' if group else ''}"
    sw = os.path.join(tmp, name + ".toml")
    with open(sw, "w") as f:
        f.write(f'base = "{os.path.basename(base)}"\n[grid]\nseed = [1, 2, 3, 4]\n')
    out = os.path.join(tmp, name)
    args = [stale, "sweep", sw, "--quiet", "--jobs", "2", "--out", out] + (["--isolate"] if isolate else [])
    p = start(args, new_group=group)
    what = f"sweep{' --isolate' if isolate else ''} {sig.name}{' (process group)' if group else ''}"
    wait_streaming(p, os.path.join(out, "runs"), 2, what)
    dt = stop(p, sig, out, group=group)
    if sig == signal.SIGKILL:
        if p.returncode != -signal.SIGKILL:
            problem(f"{what}: exit {p.returncode}")
    else:
        expect_code(p, sig, what)
    partials = [n for n in os.listdir(os.path.join(out, "runs")) if n.endswith(".partial")]
    if len(partials) < 2:
        problem(f"{what}: {len(partials)} .partial files kept, expected the 2 runs that were streaming")
    for n in partials:
        check_partial(os.path.join(out, "runs", n), what)
    if sig != signal.SIGKILL:  # a killed sweep cannot remove its own lock file (no lock, all the same)
        no_lock_files(out, what)
    times.append((what, dt))


def no_lock_files(folder, what):
    """a process that ended on a signal leaves no lock file behind (each is removed as its lock
    ends, or by the process as it ends in set-up)"""
    left = [os.path.join(d, n) for d, _, names in os.walk(folder) for n in names if n.endswith(".lock")]
    if left:
        problem(f"{what}: lock files left: {left}")


SETUP_TOML = ('seed = 1\nbackend = "cpu"\n[objective]\nname = "logistic"\ngenerator = "synthetic"\n'
              'dim = 1000\nsamples = 4000\nbatch_size = 100\nstages = 4\n[method]\nname = "rpd"\nlr = 0.01\n'
              'updates = 1000\n[delay]\nname = "uniform"\nmax = 4\n[log]\nprogress = false\n')


def sweep_in_setup(stale, tmp, sig, limit, times):
    """an in-process sweep whose two workers compute their objectives' constants (seeds give
    other data): it writes its index and ends, without waiting for the set-ups"""
    name = f"sweep-setup-{sig.name}"
    with open(os.path.join(tmp, name + "-base.toml"), "w") as f:
        f.write(SETUP_TOML)
    sw = os.path.join(tmp, name + ".toml")
    with open(sw, "w") as f:
        f.write(f'base = "{name}-base.toml"\n[grid]\nseed = [1, 2]\n')
    out = os.path.join(tmp, name)
    env = dict(os.environ, STALE_CACHE_DIR=os.path.join(tmp, f"cache-{name}"))  # no cached constants
    p = subprocess.Popen([stale, "sweep", sw, "--quiet", "--jobs", "2", "--out", out], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(0.5)
    what = f"sweep in its runs' set-up, {sig.name}"
    if p.poll() is not None:
        fail(f"{what}: the sweep ended before the signal (exit {p.returncode}); make its set-up longer")
    dt = stop(p, sig, out)
    expect_code(p, sig, what)
    if not os.path.exists(os.path.join(out, "index.csv")):
        problem(f"{what}: no index.csv")
    no_lock_files(out, what)
    times.append((what, dt))


def in_setup(stale, tmp, sig, limit, times):
    """a run still computing its constants: nothing streams yet, nothing to keep"""
    cfg = os.path.join(tmp, "setup.toml")
    with open(cfg, "w") as f:
        f.write(SETUP_TOML)
    out = os.path.join(tmp, f"setup-{sig.name}.h5")
    env = dict(os.environ, STALE_CACHE_DIR=os.path.join(tmp, f"cache-{sig.name}"))  # no cached constants
    p = subprocess.Popen([stale, "run", cfg, "--out", out, "--quiet"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(0.5)
    if p.poll() is not None:
        fail(f"set-up {sig.name}: the run ended before the signal (exit {p.returncode}); make its set-up longer")
    dt = stop(p, sig, out)
    expect_code(p, sig, f"set-up {sig.name}")
    if os.path.exists(out):
        problem(f"set-up {sig.name}: the run finished instead of stopping")
    if os.path.exists(out + ".partial"):  # nothing to keep yet; whatever is kept must resume
        check_partial(out + ".partial", f"set-up {sig.name}", checkpoint=False)
    if os.path.exists(out + ".lock"):
        problem(f"set-up {sig.name}: the run's lock file was left")
    times.append((f"run in its set-up, {sig.name}", dt))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stale", required=True)
    ap.add_argument("--limit", type=float, default=1.0, help="seconds a process may take to end after a signal")
    a = ap.parse_args()
    stale = os.path.abspath(a.stale)
    t0 = time.time()
    times = []
    with tempfile.TemporaryDirectory(prefix="stale-signals-") as tmp:
        os.environ["STALE_CACHE_DIR"] = os.path.join(tmp, "cache")
        for sig in SIGNALS:
            one_run(stale, tmp, sig, a.limit, times)
            sweep(stale, tmp, sig, a.limit, times)
            sweep(stale, tmp, sig, a.limit, times, isolate=True)
            in_setup(stale, tmp, sig, a.limit, times)
            sweep_in_setup(stale, tmp, sig, a.limit, times)
        sweep(stale, tmp, signal.SIGINT, a.limit, times, isolate=True, group=True)
        sweep(stale, tmp, signal.SIGKILL, a.limit, times, isolate=True)
    for what, dt in times:
        print(f"  {what}: ended in {dt:.3f} s")
    worst = max(times, key=lambda t: t[1])
    print(f"signals: {len(times)} cases, the slowest {worst[0]} in {worst[1]:.3f} s (limit {a.limit} s)")
    slow = [(w, d) for w, d in times if d > a.limit]
    if slow:
        problem("took longer than the limit: " + "; ".join(f"{w} {d:.2f} s" for w, d in slow))
    if PROBLEMS:
        fail(f"{len(PROBLEMS)} failed checks (above)")
    print(f"signals: all checks passed in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
