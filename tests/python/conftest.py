"""Fixtures of the analysis-script tests: small run files made by the `stale` binary (skipped
when it is not built) and synthetic run files and sweep folders written with h5py, whose
curves are chosen by hand so that the expected answers are known exactly."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPTS = os.path.join(ROOT, "scripts")
sys.path.insert(0, SCRIPTS)
from stale_analysis.schema import RUN_SCHEMA_VERSION  # noqa: E402


def skip_unless_committed_bits(target: str, toolchain: str, what: str):
    """Skips a test that compares with bits committed from a build (a fixture file, a printed
    number) unless this build has the target and toolchain those bits are promised for: the
    golden digests' (tests/golden/digests.json), on every CPU of that target"""
    golden = json.loads(open(os.path.join(ROOT, "tests", "golden", "digests.json")).read())
    if target != golden["target"] or toolchain != golden["toolchain"]:
        pytest.skip(f"{what} are bits of {golden['target']} builds with {golden['toolchain']}; this build is "
                    f"{target} with {toolchain}")


def binary_build(stale_bin: str) -> tuple[str, str]:
    """(CPU target, toolchain) of a `stale` binary, from `stale info`"""
    info = dict(line.split(": ", 1) for line in subprocess.run([stale_bin, "info"], capture_output=True, text=True,
                                                                check=True).stdout.splitlines() if ": " in line)
    return info.get("CPU target", "unknown").split()[0], info.get("toolchain", "unknown")


def script(name: str, *args, cwd=None):
    """Runs scripts/<name> with args; returns the CompletedProcess (text, captured)."""
    return subprocess.run([sys.executable, os.path.join(SCRIPTS, name), *map(str, args)], capture_output=True,
                          text=True, cwd=cwd or ROOT, env={**os.environ, "MPLBACKEND": "Agg"})


def _toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


def to_toml(cfg: dict) -> str:
    top = [f"{k} = {_toml_value(v)}" for k, v in cfg.items() if not isinstance(v, dict)]
    parts = ["\n".join(top)]
    for k, v in cfg.items():
        if isinstance(v, dict):
            parts.append(f"[{k}]\n" + "\n".join(f"{kk} = {_toml_value(vv)}" for kk, vv in v.items()))
    return "\n\n".join(parts) + "\n"


def base_config(**over) -> dict:
    """A config with the sections the scripts read; keys given as 'section.key'=value."""
    cfg = {"seed": 0,
           "objective": {"name": "quadratic", "stages": 8},
           "method": {"name": "rpd", "lr": 0.015625, "updates": 100, "time_budget": 0.0, "batch_order": "auto"},
           "delay": {"name": "uniform", "max": 0},
           "log": {"exact_mean": True, "out": ""}}
    for key, value in over.items():
        if "." in key:
            sec, name = key.split(".", 1)
            cfg[sec][name] = value
        else:
            cfg[key] = value
    return cfg


def write_run(path, subopt, status="ok", bound=None, time=None, L=4.0, L_source=None, G=1.0, measured=None, **config):
    """A run file with the layout of src/io/run_log.cpp, reduced to what the scripts read; L_source
    "estimated (…)" marks a bound evaluated with an estimated L (/theory/bound_uses_estimated_L = 1);
    G: the running G (/metrics/G, a number or a series; /theory/G its last value); measured: the
    (1/K)Σ‖∇f(w_k)‖² series (default 0.1·|subopt|)."""
    cfg = base_config(**config)
    subopt = np.asarray(subopt, dtype=float)
    n = len(subopt)
    k = np.linspace(0, cfg["method"]["updates"], n)
    gm = np.abs(subopt) * 0.1 if measured is None else np.asarray(measured, float)
    Gs = np.broadcast_to(np.asarray(G, float), (n,)).copy()
    bound = np.full(n, 10.0) * (1 + gm) if bound is None else np.asarray(bound, float)
    with h5py.File(path, "w") as f:
        f.attrs["config"] = to_toml(cfg)
        f.attrs["status"] = status
        f.attrs["version"] = "test"
        f.attrs["schema_version"] = RUN_SCHEMA_VERSION
        f.attrs["git_sha"] = "0"
        m = f.create_group("metrics")
        for name, v in {"k": k, "subopt": subopt, "loss": subopt, "grad_norm_sq_mean": gm, "bound": bound,
                        "bound_stale": bound * 0.5, "G": Gs, "time": np.full(n, np.nan) if time is None else time}.items():
            m[name] = v
        t = f.create_group("theory")
        lr = cfg["method"]["lr"]
        for key, v in {"L": L, "f_star": 0.0, "lr": lr, "K": cfg["method"]["updates"], "S": cfg["objective"]["stages"],
                       "delta": float(cfg["delay"]["max"]), "G": float(Gs[-1]), "lr_within_1_over_L": int(lr <= 1 / L)}.items():
            t.attrs[key] = v
        if L_source is not None:
            t.attrs["L_source"] = L_source
            t.attrs["bound_uses_estimated_L"] = int(L_source.startswith("estimated"))
    return str(path)


def write_sweep(folder, points):
    """A sweep folder: points = [(axes dict, subopt curve, status[, write_run keywords])]; index.csv
    lists the axes."""
    os.makedirs(os.path.join(folder, "runs"), exist_ok=True)
    axes = list(points[0][0])
    rows = []
    for i, (ax, curve, status, *extra) in enumerate(points):
        rel = os.path.join("runs", f"r{i}.h5")
        write_run(os.path.join(folder, rel), curve, status=status, **(extra[0] if extra else {}), **ax)
        rows.append({"run": f"r{i}", "position": i, **ax, "status": status, "k": 100, "subopt": float(curve[-1]),
                     "path": rel})
    with open(os.path.join(folder, "index.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return str(folder)


def decaying(c, n=40, rate=3.0):
    """A smooth, stable curve c·(0.2 + e^{−rate t}) on t ∈ [0, 1]."""
    t = np.linspace(0, 1, n)
    return c * (0.2 + np.exp(-rate * t))


def mixed_sweep(folder):
    """RPD with δ ∈ {8, 60} and PipeDream with δ = 72 over γ ∈ {2^-4, 2^-3, 2^-1} (L = 4: the last is
    γ > 1/L), one PipeDream run that explodes, one failed run without a file."""
    pts = []
    for name, dmax in (("rpd", 8), ("rpd", 60), ("pipedream", 72)):
        for lr in (0.0625, 0.125, 0.5):
            curve = decaying(1.0 + dmax / 100 + lr)
            if name == "pipedream" and lr == 0.125:
                curve = np.concatenate([curve[:20], np.logspace(1, 200, 20)])
            pts.append(({"method.name": name, "delay.max": dmax, "method.lr": lr, "seed": 0}, curve, "ok"))
    d = write_sweep(folder, pts)
    # a grid point whose run failed: in the index, no run file
    with open(os.path.join(d, "index.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    extra = {k: "" for k in rows[0]}
    extra.update({"run": "rfailed", "position": len(rows), "method.name": "rpd", "delay.max": 420, "method.lr": 0.0625,
                  "seed": 0, "status": "failed", "path": "runs/rfailed.h5"})
    os.makedirs(os.path.join(d, "logs"), exist_ok=True)
    with open(os.path.join(d, "logs", "rfailed.log"), "w") as f:
        f.write("error: config: delay.max: out of memory estimate\n")
    with open(os.path.join(d, "index.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows + [extra])
    return d


@pytest.fixture(scope="session")
def stale_bin():
    path = os.path.abspath(os.environ.get("STALE_BIN") or os.path.join(ROOT, os.environ.get("BUILD_DIR", "build"), "stale"))
    if not os.path.exists(path):
        pytest.skip(f"{path} not built")
    return path


@pytest.fixture(scope="session")
def binary_runs(stale_bin, tmp_path_factory):
    """Run files made by the binary: RPD on the E1 problem, 200 updates, for
    δ ∈ {0, 8} × γ ∈ {2^-6, 2^-5} × seeds {0, 1}; one run with γ = 1 (diverges); one PipeDream run (E2 problem, S = 4, 120 slots)."""
    d = tmp_path_factory.mktemp("runs")
    runs = {}

    def run(name, *over, config="main_rpd_delays.toml"):
        out = d / f"{name}.h5"
        r = subprocess.run([stale_bin, "run", os.path.join(ROOT, "experiments", config), *over, "--out", str(out), "-q"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        runs[name] = str(out)

    for delta in (0, 8):
        for lr in (0.015625, 0.03125):
            for seed in (0, 1):
                run(f"d{delta}_lr{lr}_s{seed}", "method.updates=200", "log.every=20", f"delay.max={delta}",
                    f"method.lr={lr}", f"seed={seed}")
    run("diverging", "method.updates=400", "log.every=20", "delay.max=0", "method.lr=1.0")
    # a schedule method (PipeDream on the E2 problem, S = 4): its run file has /schedule and a time axis
    run("pipedream", "objective.stages=4", "method.time_budget=120", config="e2_nesterov.toml")
    return runs


@pytest.fixture(scope="session")
def binary_sweep(stale_bin, tmp_path_factory):
    """A real sweep: rpd (δ = 4) and pipedream over three step sizes, two seeds, S = 3."""
    d = tmp_path_factory.mktemp("binary_sweep")
    (d / "base.toml").write_text(
        '[objective]\nname = "quadratic"\ngenerator = "random"\ndim = 12\nsamples = 24\nbatch_size = 4\nstages = 3\n'
        '[method]\nname = "rpd"\nlr = 0.01\nupdates = 240\n'
        '[log]\nevery = 20\nprogress = false\n')
    (d / "sweep.toml").write_text('base = "base.toml"\n[grid]\n"method.lr" = [0.01, 0.04, 100.0]\nseed = [0, 1]\n[zip]\n'
                                  '"method.name" = ["rpd", "pipedream"]\n"delay.name" = ["uniform", "zero"]\n'
                                  '"delay.max" = [4, 0]\n')
    r = subprocess.run([stale_bin, "sweep", str(d / "sweep.toml"), "-q", "--jobs", "1", "--out", str(d / "out")],
                       capture_output=True, text=True, cwd=d)
    assert r.returncode == 0, r.stderr
    return d
