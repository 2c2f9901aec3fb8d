#!/usr/bin/env python3
"""The PACI experiment set (issue #15; theory.md §5): PACI against the flush schedules (1F1B-flush,
GPipe, ZB-H1; with two chunks per device ZB-V, DualPipeV, interleaved 1F1B, interleaved ZB and
looped BFS, on the same 8 devices: issue #50), PipeDream (with and without stashing) and 2BW at
the same global batch, on logistic regression, the Nesterov quadratic and the char-level GPT, on
a common simulated time budget.
Runs every sweep from nothing (sweeps resume: runs already in OUT are skipped), picks the step
size per method by the stable rule of theory.md §8 (scripts/stepsize.py), reruns the chosen
configurations under unit costs, and writes results/PACI.md with its figures:

  paci_loss_vs_time.png  loss against simulated time, every method at a = 8
  paci_speedup.png       time-to-target speedup of PACI over the fastest flush baseline at the
                         same a, next to the bubble-only ideal (a + S − 1)/a and the
                         simulator's utilisation ratio
  paci_memory.png        peak activations in flight and weight versions per stage
  paci_bound.png         the measured (1/K) Σ ‖∇f(w_k)‖² of PACI (SGD) against the §3 bound
                         with the global delay and with the per-stage drift

  python3 scripts/paci_experiment.py [--jobs 2] [--stage all|linear|unit|charlm|report]

Each stage is a separate step so that it can run under the machine's lock on its own; the CPU
seconds of every stage's child processes are kept in OUT/cpu_seconds.json and quoted in the
report (summed over invocations, so a resumed stage adds what it ran). The tables, figures and
verdicts are written by scripts/paci_report.py from the sweeps this file defines and runs. Child runs are single-threaded (OMP_NUM_THREADS=1): results do not depend on --jobs.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import time
import tomllib
from collections import defaultdict

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_analysis import choose, load_run, provenance, read_index, runner, tail_stats  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
S = 8
A_VALUES = [2, 4, 8, 16]
FIG_A = 8
# the flush baselines: one chunk per device (1f1b-flush, gpipe, zb-h1) and two (zb-v, dualpipev,
# interleaved, interleaved-zb, looped-bfs; run by the *_chunked and *_dualpipev sweeps on the same
# S = 8 devices, the model in 2S = 16 blocks: CHUNKED_SPLIT)
FLUSH = ["1f1b-flush", "gpipe", "zb-h1", "zb-v", "dualpipev", "interleaved", "interleaved-zb", "looped-bfs"]
CHUNKED = ("zb-v", "dualpipev", "interleaved", "interleaved-zb", "looped-bfs")
# the sweep families of a linear (objective, optimizer): "" the one-chunk methods, "_pd" PipeDream,
# "_chunked" and "_dualpipev" the two-chunk flush schedules
LINEAR_KINDS = ("", "_pd", "_chunked", "_dualpipev")
LINEAR = [f"paci_{o}_{opt}{k}_sweep" for o in ("nesterov", "logistic") for opt in ("sgd", "adamw") for k in LINEAR_KINDS]
CHARLM = ["paci_charlm_sweep", "paci_charlm_pd_sweep"]
UNIT_COSTS = {"costs.forward": 1.0, "costs.backward": 1.0, "costs.weight": 0.0, "costs.latency": 0.0,
              "method.time_budget": 2000.0}
LABEL = {"paci": "PACI", "1f1b-flush": "1F1B-flush", "gpipe": "GPipe", "zb-h1": "ZB-H1", "2bw": "2BW",
         "pipedream": "PipeDream", "pipedream-nostash": "PipeDream (no stash)", "zb-v": "ZB-V",
         "dualpipev": "DualPipeV", "interleaved": "Interleaved 1F1B", "interleaved-zb": "Interleaved ZB",
         "looped-bfs": "Looped BFS"}


def split_keys(name, opt):
    """The keys that place a method's model on the S = 8 devices: objective.stages counts chunks,
    so the two-chunk schedules split the same model into 2S blocks (each chunk op half its
    device's cost) and log and warm up per step of every block, as the *_chunked sweeps set."""
    v = 2 if name in CHUNKED else 1
    keys = {"objective.stages": S * v, "log.every": S * v}
    if opt == "adamw":
        keys["method.warmup"] = 64 * v
    return keys
def sweep_out(out, stem):
    return os.path.join(out, stem[: -len("_sweep")])


# ---------------------------------------------------------------- running

def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def record_cpu(out, stage, seconds, wall):
    path = os.path.join(out, "cpu_seconds.json")
    data = json.load(open(path)) if os.path.exists(path) else {}
    # accumulated over invocations: a resumed stage adds what it ran this time
    prev = data.get(stage, {"cpu_s": 0.0, "wall_s": 0.0})
    data[stage] = {"cpu_s": round(prev["cpu_s"] + seconds, 1), "wall_s": round(prev["wall_s"] + wall, 1)}
    os.makedirs(out, exist_ok=True)
    json.dump(data, open(path, "w"), indent=1, sort_keys=True)


def run_sweep(stale, path, out_dir, jobs):
    print(f"== {os.path.relpath(path, ROOT)}", file=sys.stderr)
    runner.sweep(stale, path, out_dir, jobs, threads=1, report=True)


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return repr(v)


def write_generated_sweep(path, comments, base, fixed, zipped, drop_unread=True):
    """A generated sweep file: the comment lines, the base config, [set] = fixed, seeds 0-2,
    [zip] = zipped (key -> list); drop_unread for sets that mix SGD and AdamW variants."""
    lines = [f"# {c}" for c in comments] + [f"base = {json.dumps(base)}"]
    if drop_unread:
        lines += ["# the SGD variants do not read the cosine floor method.lr_min", 'unread = "drop"']
    lines += ["", "[set]"] + [f"{json.dumps(k)} = {toml_value(v)}" for k, v in fixed.items()]
    lines += ["", "[grid]", "seed = [0, 1, 2]", "", "[zip]"]
    lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in zipped.items()] + [""]
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def write_unit_sweeps(out):
    """One generated sweep per (objective, optimizer): the chosen (method, a, γ) of the
    realistic-cost sweeps, rerun under unit costs (t_F = t_B = 1, no latency) on a budget of
    2000 (about as many micro-batches as 3000 under the realistic model)."""
    gen = os.path.join(out, "gen")
    os.makedirs(gen, exist_ok=True)
    paths = []
    for obj in ("nesterov", "logistic"):
        for opt in ("sgd", "adamw"):
            chosen = select(load_group(out, obj, opt, "real"), "subopt", False)
            sweep_file = os.path.join(ROOT, "experiments", f"paci_{obj}_{opt}_sweep.toml")
            fixed = tomllib.load(open(sweep_file, "rb")).get("set", {})
            fixed.update(UNIT_COSTS)
            names, accs, lrs, lr_mins = [], [], [], []
            split = defaultdict(list)  # the per-method placement keys, zipped (not [set])
            for (name, a), c in sorted(chosen.items()):
                names.append(name)
                accs.append(a)
                lrs.append(c["lr"])
                lr_mins.append(c["lr"] / 10)
                for k, v in split_keys(name, opt).items():
                    split[k].append(v)
            for k in split:
                fixed.pop(k, None)
            base = os.path.relpath(os.path.join(ROOT, "experiments", f"paci_{obj}.toml"), gen)
            paths.append(write_generated_sweep(
                os.path.join(gen, f"paci_{obj}_{opt}_unit_sweep.toml"),
                [f"generated by scripts/paci_experiment.py: the chosen configurations of paci_{obj}_{opt}_*_sweep",
                 "rerun under unit costs"], base, fixed,
                {"method.name": names, "method.accumulation": accs, "method.lr": lrs, "method.lr_min": lr_mins,
                 **split}))
    return paths


# ---------------------------------------------------------------- reading

class Cfg:
    """The runs of one (method, a) configuration, by step size."""

    def __init__(self, name, a):
        self.name, self.a = name, a
        self.by_lr = defaultdict(list)


def load_group(out, obj, opt, costs):
    """(name, a) -> Cfg with the runs of the objective/optimizer under 'real' or 'unit' costs."""
    if costs == "real":
        dirs = [sweep_out(out, f"paci_{obj}_{opt}{k}_sweep") for k in LINEAR_KINDS]
    else:
        dirs = [sweep_out(os.path.join(out, "unit"), f"paci_{obj}_{opt}_unit_sweep")]
    return load_sweep_dirs(dirs)


def curve(runs, y):
    """time, mean, min, max over seeds (a diverged run is +inf from where it stopped)."""
    n = max(len(r.metrics["time"]) for r in runs)
    ref = max(runs, key=lambda r: len(r.metrics["time"]))
    ys = []
    for r in runs:
        v = np.asarray(r.metrics[y], dtype=float)
        v = np.where(np.isfinite(v), v, np.inf)
        ys.append(np.concatenate([v, np.full(n - len(v), np.inf)]))
    ys = np.array(ys)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.asarray(ref.metrics["time"], dtype=float), ys.mean(0), ys.min(0), ys.max(0)


def select(cfgs, y, lm, rule="stable"):
    """The step-size rule (theory.md §8's stable rule, or the lowest tail mean) per
    configuration: (name, a) -> dict(lr, why, runs, curve, finals)."""
    out = {}
    for key, c in cfgs.items():
        stats = {lr: tail_stats(curve(rs, y)[1]) for lr, rs in c.by_lr.items()}
        lr, why = choose(stats, rule, lm)
        runs = sorted(c.by_lr[lr], key=lambda r: int(r.key("seed")))
        finals = [float(r.metrics[y][-1]) if r.status == "ok" else math.inf for r in runs]
        out[key] = {"lr": lr, "why": why, "runs": runs, "curve": curve(runs, y), "finals": finals,
                    "grid": sorted(c.by_lr), "diverged": sum(r.status != "ok" for r in runs)}
    return out


def schedule_facts(run):
    a = run.group_attrs("schedule")
    return {"bubble": float(a["bubble_fraction"]), "makespan": float(a["makespan"]),
            "peak_inflight": [int(x) for x in run.dataset("schedule/peak_inflight")],
            "peak_versions": [int(x) for x in run.dataset("schedule/peak_versions")],
            "crossed": [int(x) for x in run.dataset("schedule/max_crossed_measured")],
            "microbatches": int(a["microbatches"]), "updates": int(run.metrics["k"][-1])}


SETTINGS = [("logistic", "sgd"), ("logistic", "adamw"), ("nesterov", "sgd"), ("nesterov", "adamw"), ("charlm", "adamw")]
GPT_A = [4, 8]


def load_sweep_dirs(dirs):
    """(name, a) -> Cfg with the ok and diverged runs of the sweep folders that exist."""
    cfgs = {}
    for d in dirs:
        if not os.path.exists(os.path.join(d, "index.csv")):
            continue
        for row in read_index(d):
            if row["status"] not in ("ok", "diverged"):
                continue
            run = load_run(os.path.join(d, row["path"]))
            name = run.key("method.name")
            a = int(run.key("method.accumulation")) if name not in ("pipedream", "pipedream-nostash") else 1
            cfgs.setdefault((name, a), Cfg(name, a)).by_lr[float(run.key("method.lr"))].append(run)
    return cfgs


def selection(out, obj, opt, costs="real"):
    if obj == "charlm":
        return select(load_sweep_dirs([sweep_out(out, s) for s in CHARLM]), "loss", True)
    return select(load_group(out, obj, opt, costs), "subopt", False)


def stages_of(obj, fixed):
    """objective.stages of a PACI config (its base file, overridden by a sweep's [set])"""
    base = tomllib.load(open(os.path.join(ROOT, "experiments", f"paci_{obj}.toml"), "rb"))
    return int(fixed.get("objective.stages", base.get("objective", {}).get("stages", 8)))


def all_updates(S, M, a):
    """every block update of M micro-batches: each of the S blocks steps after every a-th
    micro-batch and after the last (the run's plan must ask for exactly these)"""
    return S * -(-M // a)


def write_parity_sweeps(out):
    """PACI at 1F1B-flush's chosen γ on exactly flush's number of micro-batches (same data,
    same number of optimizer steps, the cosine schedule completed): the paper's parity claim
    is about equal training progress, which a common time budget does not give."""
    gen = os.path.join(out, "gen")
    os.makedirs(gen, exist_ok=True)
    paths = []
    for obj, opt in SETTINGS:
        sel = selection(out, obj, opt)
        accs, mbs, lrs = [], [], []
        for a in (GPT_A if obj == "charlm" else A_VALUES):
            f = sel.get(("1f1b-flush", a))
            if f is None:
                continue
            accs.append(a)
            mbs.append(schedule_facts(f["runs"][0])["microbatches"])
            lrs.append(f["lr"])
        if obj == "charlm":
            fixed = {}
        else:
            fixed = tomllib.load(open(os.path.join(ROOT, "experiments", f"paci_{obj}_{opt}_sweep.toml"), "rb")).get("set", {})
        fixed.update({"method.name": "paci", "method.time_budget": 0.0})
        S = stages_of(obj, fixed)
        base = os.path.relpath(os.path.join(ROOT, "experiments", f"paci_{obj}.toml"), gen)
        paths.append(write_generated_sweep(
            os.path.join(gen, f"paci_{obj}_{opt}_parity_sweep.toml"),
            ["generated by scripts/paci_experiment.py: PACI at 1F1B-flush's chosen step size on flush's",
             "micro-batch count (equal training progress)"], base, fixed,
            {"method.accumulation": accs, "method.microbatches": mbs,
             "method.updates": [all_updates(S, m, a) for a, m in zip(accs, mbs)], "method.lr": lrs,
             "method.lr_min": [x / 10 for x in lrs]}))
        if obj == "charlm":
            paths.append(write_gpt_diagnosis(gen, sel, base))
    return paths


def write_gpt_diagnosis(gen, sel, base):
    """Where PACI's gap on the GPT comes from, at equal work: 2BW (PACI's schedule and steps,
    but the backward uses the forward's weights) at flush's γ, and PACI and 1F1B-flush at a
    4× smaller γ (less weight change per step, so less version mixing in PACI's backward)."""
    rows = []
    for a in GPT_A:
        f = sel.get(("1f1b-flush", a))
        if f is None:
            continue
        M = schedule_facts(f["runs"][0])["microbatches"]
        rows.append(("2bw", a, M, f["lr"]))
        if a == max(GPT_A):
            rows += [("paci", a, M, f["lr"] / 4), ("1f1b-flush", a, M, f["lr"] / 4)]
    S = stages_of("charlm", {})
    return write_generated_sweep(
        os.path.join(gen, "paci_charlm_adamw_diagnosis_sweep.toml"),
        ["generated by scripts/paci_experiment.py: the GPT gap at equal work (2BW; a smaller γ)"], base,
        {"method.time_budget": 0.0},
        {"method.name": [r[0] for r in rows], "method.accumulation": [r[1] for r in rows],
         "method.microbatches": [r[2] for r in rows],
         "method.updates": [all_updates(S, r[2], r[1]) for r in rows], "method.lr": [r[3] for r in rows],
         "method.lr_min": [r[3] / 10 for r in rows]}, drop_unread=False)


def parity_runs(out, obj, opt):
    d = sweep_out(os.path.join(out, "parity"), f"paci_{obj}_{opt}_parity_sweep")
    by_a = defaultdict(list)
    if os.path.exists(os.path.join(d, "index.csv")):
        for row in read_index(d):
            if row["status"] in ("ok", "diverged"):
                run = load_run(os.path.join(d, row["path"]))
                by_a[int(run.key("method.accumulation"))].append(run)
    return by_a


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stage", choices=["all", "linear", "unit", "charlm", "parity", "report"], default="all")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "stale"))
    p.add_argument("--out", default=os.path.join(ROOT, "sweeps", "paci"))
    p.add_argument("--results", default=os.path.join(ROOT, "results"))
    a = p.parse_args(argv)
    stages = ["linear", "unit", "charlm", "parity", "report"] if a.stage == "all" else [a.stage]
    for stage in stages:
        c0, w0 = child_cpu(), time.time()
        if stage == "linear":
            for s in LINEAR:
                run_sweep(a.bin, os.path.join(ROOT, "experiments", s + ".toml"), sweep_out(a.out, s), a.jobs)
        elif stage == "unit":
            for path in write_unit_sweeps(a.out):
                run_sweep(a.bin, path, sweep_out(os.path.join(a.out, "unit"), os.path.basename(path)[:-5]), a.jobs)
        elif stage == "charlm":
            for s in CHARLM:
                run_sweep(a.bin, os.path.join(ROOT, "experiments", s + ".toml"), sweep_out(a.out, s), a.jobs)
        elif stage == "parity":
            for path in write_parity_sweeps(a.out):
                run_sweep(a.bin, path, sweep_out(os.path.join(a.out, "parity"), os.path.basename(path)[:-5]), a.jobs)
        else:
            from paci_report import write_report  # the report reads what the stages above ran

            write_report(a.out, a.results)  # each file it writes is stamped as it is written
        if stage != "report":
            record_cpu(a.out, stage, child_cpu() - c0, time.time() - w0)


if __name__ == "__main__":
    main()
