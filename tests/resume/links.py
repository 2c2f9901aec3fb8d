#!/usr/bin/env python3
"""Nothing written through a link (issue 54): real processes, registered with CTest.

  python3 tests/resume/links.py --stale build/stale

Anyone who can write into an output or sweep folder (a group project folder, a shared temporary
folder) can put a link at a name stale is about to write. Each case places one, pointing at a
file of the user's (the victim), and checks that the victim keeps its content byte for byte and
its size:

1. a run's lock file `OUT.lock` as a symbolic link: refused in one line naming the link, exit 2,
   no run file; the same as a hard link (the pid written into a lock would reach the victim);
2. a sweep folder's `.sweep.lock` as a symbolic link: refused in one line, exit 2;
3. a run's `OUT.partial` as a symbolic link to the victim: refused as a damaged .partial (read,
   not written); with --force, and for a dangling link, the link is replaced by the run's own
   file, the run finishes, the victim is untouched; links at the names a run writes before its
   renames (OUT.partial.new, OUT.partial.closing) are replaced the same way;
4. a sweep's run logs (`--isolate`: each child's output goes to logs/HASH.log) as symbolic links:
   the sweep finishes, each log is a plain file, the victims are untouched.

Before the fix, case 1 truncated the victim to the writer's pid (the lock was opened with O_CREAT
and ftruncate()d) and case 3 truncated it to an HDF5 file (H5F_ACC_TRUNC through the link).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kill_and_resume import config, fail, one_line_error, run  # noqa: E402

VICTIM_TEXT = b"someone's notes: not stale's to touch\n" * 50


def victim(tmp, name="victim.txt"):
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(VICTIM_TEXT)
    return path


def untouched(path, case):
    with open(path, "rb") as f:
        data = f.read()
    if data != VICTIM_TEXT:
        fail(f"{case}: the link's target was written: {len(data)} bytes now, {len(VICTIM_TEXT)} before "
             f"(starts {data[:40]!r})")


def lock_links(stale, tmp):
    cfg = config(tmp, "pipedream", 300)
    out = os.path.join(tmp, "a.h5")
    v = victim(tmp)
    os.symlink(v, out + ".lock")
    r = run(stale, "run", cfg, "--out", out, "--quiet")
    untouched(v, "a symbolic link at OUT.lock")
    one_line_error(r, out + ".lock", "symbolic link", case="a symbolic link at OUT.lock")
    if os.path.exists(out) or os.path.exists(out + ".partial"):
        fail("a refused run left a run file")
    os.unlink(out + ".lock")

    os.link(v, out + ".lock")
    r = run(stale, "run", cfg, "--out", out, "--quiet")
    untouched(v, "a hard link at OUT.lock")
    one_line_error(r, out + ".lock", "hard links", case="a hard link at OUT.lock")
    os.unlink(out + ".lock")
    print("OUT.lock as a symbolic or hard link: refused in one line, the target untouched")

    base = config(tmp, "pipedream", 200)
    sweep = os.path.join(tmp, "links_sweep.toml")
    with open(sweep, "w") as f:
        f.write(f'base = "{os.path.basename(base)}"\n[grid]\nseed = [1, 2]\n')
    d = os.path.join(tmp, "links_sweep")
    os.makedirs(d)
    os.symlink(v, os.path.join(d, ".sweep.lock"))
    r = run(stale, "sweep", sweep, "--out", d, "--quiet")
    untouched(v, "a symbolic link at .sweep.lock")
    one_line_error(r, ".sweep.lock", "symbolic link", case="a symbolic link at .sweep.lock")
    print(".sweep.lock as a symbolic link: refused in one line, the target untouched")


def partial_links(stale, tmp):
    cfg = config(tmp, "pipedream", 300)
    for kind in ("to the victim", "dangling"):
        out = os.path.join(tmp, f"p_{kind.replace(' ', '_')}.h5")
        v = victim(tmp, f"victim_{kind.replace(' ', '_')}.txt")
        os.symlink(v if kind == "to the victim" else os.path.join(tmp, "nowhere", "x"), out + ".partial")
        if kind == "to the victim":
            # an existing .partial that is no run file: refused as damaged (read, never written)
            r = run(stale, "run", cfg, "--out", out, "--quiet")
            untouched(v, "a symbolic link at OUT.partial, without --force")
            one_line_error(r, out + ".partial", "--force", case="a symbolic link at OUT.partial, without --force")
        r = run(stale, "run", cfg, "--out", out, "--quiet", "--force")
        untouched(v, f"a symbolic link at OUT.partial ({kind})")
        if r.returncode != 0 or not os.path.isfile(out) or os.path.islink(out):
            fail(f"a run over a link at OUT.partial ({kind}): exit {r.returncode}, {r.stderr!r}")
        if os.path.lexists(out + ".partial"):
            fail(f"the run left {out}.partial behind ({kind})")
    # the names a run writes before its renames: the new file (OUT.partial.new) and the finishing
    # copy (OUT.partial.closing)
    out = os.path.join(tmp, "p_working.h5")
    victims = {suffix: victim(tmp, f"victim{suffix}.txt") for suffix in (".partial.new", ".partial.closing")}
    for suffix, v in victims.items():
        os.symlink(v, out + suffix)
    r = run(stale, "run", cfg, "--out", out, "--quiet")
    for suffix, v in victims.items():
        untouched(v, f"a symbolic link at OUT{suffix}")
    if r.returncode != 0 or not os.path.isfile(out):
        fail(f"a run over links at its working names: exit {r.returncode}, {r.stderr!r}")
    leftover = [suffix for suffix in victims if os.path.lexists(out + suffix)]
    if leftover:
        fail(f"the run left {leftover} behind")
    print("OUT.partial, OUT.partial.new, OUT.partial.closing as symbolic links: a linked .partial is refused as "
          "damaged, and with --force, as for the working names, the run wrote its own files; the targets untouched")


def log_links(stale, tmp):
    base = config(tmp, "pipedream", 200)
    sweep = os.path.join(tmp, "logs_sweep.toml")
    with open(sweep, "w") as f:
        f.write(f'base = "{os.path.basename(base)}"\n[grid]\nseed = [1, 2]\n')
    # the first sweep names the logs; the second, in a fresh folder, meets links at those names
    first = os.path.join(tmp, "logs_first")
    r = run(stale, "sweep", sweep, "--out", first, "--isolate", "--jobs", "1", "--quiet")
    if r.returncode != 0:
        fail(f"the first --isolate sweep: exit {r.returncode}: {r.stderr}")
    names = sorted(n for n in os.listdir(os.path.join(first, "logs")) if n.endswith(".log"))
    if len(names) != 2:
        fail(f"expected two run logs, found {names}")
    d = os.path.join(tmp, "logs_second")
    os.makedirs(os.path.join(d, "logs"))
    victims = [victim(tmp, f"victim_log_{i}.txt") for i in range(len(names))]
    for name, v in zip(names, victims):
        os.symlink(v, os.path.join(d, "logs", name))
    r = run(stale, "sweep", sweep, "--out", d, "--isolate", "--jobs", "1", "--quiet")
    for v in victims:
        untouched(v, "a symbolic link at a sweep's run log")
    if r.returncode != 0:
        fail(f"the sweep over linked logs: exit {r.returncode}: {r.stderr}")
    for name in names:
        p = os.path.join(d, "logs", name)
        if os.path.islink(p) or not os.path.isfile(p):
            fail(f"{p} is still a link")
    print("a sweep's run logs as symbolic links: replaced by the runs' own logs, the targets untouched")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stale", required=True)
    a = ap.parse_args()
    stale = os.path.abspath(a.stale)
    with tempfile.TemporaryDirectory() as tmp:
        lock_links(stale, tmp)
        partial_links(stale, tmp)
        log_links(stale, tmp)
    print("links: every case held")


if __name__ == "__main__":
    main()
