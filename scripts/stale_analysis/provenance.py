"""Where a committed result came from: the command that made it, the commit and build target of
the binary that computed it, and the instruction set of the machine it ran on — stated in the
file itself (a `Provenance:` line at the end of a Markdown file, text chunks in a PNG) and in one
manifest, results/PROVENANCE.md, that also covers the files that cannot carry a line (CSV, text)
and holds each file's SHA-256, so that scripts/check_results.sh can tell a file edited or left
behind after its last regeneration.

The machine matters for the float32 transformer runs only (README "Which numbers depend on the
machine"): every other result is float64 code compiled for one fixed target (x86-64-v3 by
default), whose bits do not depend on the CPU that runs it.

    from stale_analysis import provenance
    provenance.stamp_since(start, "bash scripts/reproduce.sh", results="results", bin="build/stale")
"""
import datetime
import functools
import hashlib
import os
import re
import subprocess

MANIFEST = "PROVENANCE.md"
PREFIX = "Provenance:"
# the manifest itself; results/gpu/ holds dated logs of device sessions, which name their own
# machine, GPU and commit (scripts/gpu_check.sh) and are never regenerated here
_NOT_STAMPED = {MANIFEST, ".provenance.lock"}
_OWN_RECORDS = ("gpu" + os.sep,)


def _listed(name: str) -> bool:
    return name not in _NOT_STAMPED and not name.startswith(_OWN_RECORDS)

# x86-64 micro-architecture levels (the psABI's), each with the flags /proc/cpuinfo shows for it
_LEVELS = [
    ("x86-64-v4", "AVX-512", ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")),
    ("x86-64-v3", "AVX2 + FMA", ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe")),
    ("x86-64-v2", "SSE4.2", ("sse4_2", "ssse3", "popcnt")),
]


@functools.cache
def machine() -> str:
    """`Intel(R) Xeon(R) … (x86-64-v4: AVX-512, 2 cores)`: the CPU model and the highest
    x86-64 level its flags cover."""
    model, flags = "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model == "unknown CPU":
                    model = " ".join(value.split())
                elif key == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    level = "x86-64" if flags else os.uname().machine
    for name, what, needed in _LEVELS:
        if all(f in flags for f in needed):
            level = f"{name}: {what}"
            break
    return f"{model} ({level}, {os.cpu_count()} cores)"


@functools.cache
def build(bin: str | None = "build/stale") -> dict:
    """version, git and CPU target of the binary that computed the numbers (`stale info`); of
    the installed Python package when there is no binary."""
    if bin and os.access(bin, os.X_OK):
        out = subprocess.run([bin, "info"], capture_output=True, text=True, check=False).stdout
        head = re.search(r"stale (\S+) \(git (\w+)", out)
        target = re.search(r"CPU target: (\S+)", out)
        if head:
            return {"version": head.group(1), "git": head.group(2), "target": target.group(1) if target else "?"}
    try:
        from stale import _stale

        return {"version": _stale.version, "git": _stale.git_sha, "target": _stale.cpu_target}
    except Exception:  # noqa: BLE001 - no binary and no package: say so in the line
        return {"version": "?", "git": "unknown", "target": "?"}


def line(command: str, bin: str | None = "build/stale", facts: dict | None = None) -> str:
    b, where = facts or build(bin), (facts or {}).get("machine", machine())
    day = (facts or {}).get("date", datetime.date.today().isoformat())
    return (f"{PREFIX} made by `{command}` at git {b['git']} (stale {b['version']}, built for {b['target']}) "
            f"on {where}, {day}.")


def _stamp_markdown(path: str, text_line: str) -> None:
    with open(path, encoding="utf-8") as f:
        lines = f.read().rstrip("\n").split("\n")
    lines = [x for x in lines if not x.startswith(PREFIX)]
    while lines and not lines[-1].strip():
        lines.pop()
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n\n" + text_line + "\n")


def _stamp_png(path: str, command: str, b: dict) -> None:
    try:
        from PIL import Image, PngImagePlugin
    except ImportError:  # the manifest still names the file's provenance
        return
    info = PngImagePlugin.PngInfo()
    for key, value in (("Software", f"stale {b['version']} (git {b['git']}, built for {b['target']})"),
                       ("Source", command), ("Comment", f"computed on {b['machine']}")):
        info.add_text(key, value)
    with Image.open(path) as im:
        im.load()
        im.save(path, pnginfo=info)


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_manifest(results: str) -> dict:
    """file name → {command, git, target, machine, sha256} of results/PROVENANCE.md."""
    rows = {}
    path = os.path.join(results, MANIFEST)
    if not os.path.exists(path):
        return rows
    with open(path, encoding="utf-8") as f:
        for raw in f:
            cells = [c.strip() for c in raw.strip().strip("|").split("|")]
            if len(cells) != 6 or cells[0] in ("file", "---") or set(cells[0]) <= {"-"}:
                continue
            name = cells[0].strip("`")
            rows[name] = {"command": cells[1].strip("`"), "git": cells[2], "target": cells[3], "machine": cells[4],
                          "sha256": cells[5].strip("`")}
    return rows


def write_manifest(results: str, rows: dict) -> None:
    out = ["# Where each committed result came from", "",
           "Written by scripts/stale_analysis/provenance.py whenever a script regenerates a result; "
           "`bash scripts/check_results.sh` checks that every file of results/ is listed here with its "
           "current SHA-256 (a file changed by hand or left over from an older run fails it). Markdown "
           "files repeat their row in a last `Provenance:` line, PNG figures in their text chunks "
           "(Software, Source, Comment). `hand` in the command column: prose written from the files "
           "named in it, at that commit.", "",
           "| file | made by | git | built for | machine | sha256 (first 16) |", "|---|---|---|---|---|---|"]
    for name in sorted(rows):
        r = rows[name]
        out.append(f"| `{name}` | `{r['command']}` | {r['git']} | {r['target']} | {r['machine']} | `{r['sha256']}` |")
    with open(os.path.join(results, MANIFEST), "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


def stamp(paths, command: str, results: str = "results", bin: str | None = "build/stale",
          facts: dict | None = None) -> None:
    """States `command`, the binary's commit and target and this machine in each file of `paths`
    (inside `results`) and records them, with the file's SHA-256, in the manifest. `facts`
    (version, git, target, machine, date) replaces what the binary and this machine say, for a
    file made elsewhere and not regenerated here."""
    if "|" in command:
        raise ValueError(f"provenance.stamp: the command may not hold '|' (a Markdown table cell): {command}")
    b = dict(facts or build(bin))
    b.setdefault("machine", machine())
    text_line = line(command, bin, facts)
    stamped = {}
    for p in paths:
        name = os.path.relpath(p, results)
        if not _listed(name) or name.startswith(".."):
            continue
        if p.endswith(".md"):
            _stamp_markdown(p, text_line)
        elif p.endswith(".png"):
            _stamp_png(p, command, b)
        stamped[name] = {"command": command, "git": b["git"], "target": b["target"], "machine": b["machine"],
                         "sha256": _sha256(p)[:16]}
    # read, change and write the manifest under a lock: two scripts stamping at once each keep
    # the other's rows (a plain read-modify-write lost one of them)
    import fcntl
    with open(os.path.join(results, ".provenance.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rows = read_manifest(results)
        rows.update(stamped)
        write_manifest(results, rows)


def results_root(path: str) -> str | None:
    """the results folder a file lies in: the nearest folder above it holding the manifest
    (results/, results/gpu/x → results/); None for a file outside any (runs/, a scratch -o)"""
    d = os.path.dirname(os.path.abspath(path))
    while True:
        if os.path.exists(os.path.join(d, MANIFEST)):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def written(path, command: str | None = None, bin: str | None = "build/stale"):
    """Stamps a file this process has just written, with this process's command line (or
    `command`), when it lies in a results folder; returns the path. Called where a script writes
    a result, so that each file names the script that wrote it even when several run at once
    (stamp_since, by modification time, let a script claim the files another wrote meanwhile:
    issue 51, item 8)."""
    root = results_root(os.fspath(path))
    if root is not None:
        stamp([os.path.abspath(os.fspath(path))], command or command_line(), root, bin)
    return path


def stamp_since(start: float, command: str, results: str = "results", bin: str | None = "build/stale") -> list:
    """stamp() for every file under `results` written at or after `start` (time.time() when the
    command began); returns their paths. It claims whatever else was written meanwhile, by any
    process: for a file made by hand (stamp_results.py), not for scripts, which call written()."""
    paths = []
    for dirpath, _, files in os.walk(results):
        for f in files:
            p = os.path.join(dirpath, f)
            if _listed(os.path.relpath(p, results)) and os.path.getmtime(p) >= start - 1:
                paths.append(p)
    if paths:
        stamp(sorted(paths), command, results, bin)
    return paths


def check(results: str = "results") -> list:
    """The problems of the manifest against the folder: files missing from it, files whose
    SHA-256 differs, rows whose file is gone. Empty when every file is as it was stamped."""
    rows = read_manifest(results)
    problems = []
    present = set()
    for dirpath, _, files in os.walk(results):
        for f in files:
            name = os.path.relpath(os.path.join(dirpath, f), results)
            if not _listed(name):
                continue
            present.add(name)
            if name not in rows:
                problems.append(f"{name}: not in {MANIFEST} (regenerate it with its script, or stamp it: "
                                f"python3 scripts/stamp_results.py --command CMD {os.path.join(results, name)})")
            elif _sha256(os.path.join(results, name))[:16] != rows[name]["sha256"]:
                problems.append(f"{name}: changed since it was stamped by `{rows[name]['command']}` "
                                "(regenerate it with that command, or stamp it again)")
    for name in sorted(set(rows) - present):
        problems.append(f"{name}: listed in {MANIFEST} but not in {results}/ (remove its row)")
    return problems


def command_line(argv=None) -> str:
    """This script's command line as a reader would type it from the repository root."""
    import shlex
    import sys

    argv = list(sys.argv if argv is None else argv)
    script = os.path.relpath(os.path.abspath(argv[0]), os.getcwd()) if argv else "?"
    return " ".join(["python3", script, *map(shlex.quote, argv[1:])])
