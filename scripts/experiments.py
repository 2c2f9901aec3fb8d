#!/usr/bin/env python3
"""Figures and tables of the paper experiments E1–E4 (docs/theory.md §8) from their sweeps.

  scripts/experiments.py e1|e2|e3|e4 [--sweeps sweeps] [--results results]

Each experiment reads the folders that `build/stale sweep experiments/<name>.toml` writes by
default (sweeps/e1_sweep; sweeps/e2_pd_sweep and sweeps/e2_localsgd_sweep; …; the short names
sweeps/e1, sweeps/e2_pd, … of older reproduce.sh runs are accepted too). The step size is
chosen per configuration by the "stable" rule (scripts/stepsize.py) on the mean curve over
seeds; figures show the mean with the min–max band over seeds; tables give the final f − f_*
(mean [min, max]) with the chosen γ. The table is printed to stdout and written to
RESULTS/<experiment>_table.md.
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_analysis import find_sweep, run_cli, select  # noqa: E402
from stale_analysis import provenance  # noqa: E402  (each result names the script that wrote it)
from stale_analysis.formatting import number  # noqa: E402
from stale_analysis.plotting import caption, plain_log_ticks, plt, pow2_tex  # noqa: E402

# experiment part -> the sweep file that makes it (its stem is the default output folder)
SWEEPS = {
    "e1": "e1_sweep",
    "e2_pd": "e2_pd_sweep", "e2_localsgd": "e2_localsgd_sweep",
    "e3_pd": "e3_pd_sweep", "e3_localsgd": "e3_localsgd_sweep",
    "e4_pd": "e4_pd_sweep", "e4_rpd": "e4_rpd_sweep", "e4_localsgd": "e4_localsgd_sweep",
}


def sweep_dir(root: str, part: str) -> str:
    stem = SWEEPS[part]
    return find_sweep(root, [stem, part], f"experiments/{stem}.toml --out {os.path.join(root, stem)}")


def fmt(v):
    return number(v, 4, missing="inf")


def label_of(cfg: dict) -> str:
    name = cfg.get("method.name", "")
    if name == "rpd" or cfg.get("delay.name") == "uniform":
        cyc = " (cyclic batches)" if cfg.get("method.batch_order") == "cyclic" else ""
        return f"RPD δ={cfg.get('delay.max')}{cyc}"
    if name == "pipedream" or (not name and cfg.get("delay.max") == "0"):
        return "PD"
    if "method.local_steps" in cfg:
        return f"LocalSGD H={cfg['method.local_steps']}"
    return ", ".join(f"{k}={v}" for k, v in cfg.items())


def budget_of(sel) -> float:
    """The simulated time budget of the chosen runs (method.time_budget), 0 when K-limited."""
    return float(sel["curve"][4][0].key("method.time_budget"))


def draw(ax, sel):
    xs, mean, lo, hi, _ = sel["curve"]
    line, = ax.plot(xs, mean, lw=1.5, label=f"{label_of(sel['config'])} (γ = {pow2_tex(sel['lr'])})")
    ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.15, lw=0)


def table(rows, header):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def finish(fig, ax, path, xlabel, ylabel, title):
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    provenance.written(path)


def e1(sw, res):
    sel = select(sweep_dir(sw, "e1"))
    sel.sort(key=lambda s: (s["config"].get("method.name") != "pipedream", s["config"].get("method.batch_order") == "cyclic",
                            int(s["config"].get("delay.max", 0))))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s in sel:
        draw(ax, s)
    finish(fig, ax, os.path.join(res, "e1_pd_vs_rpd.png"), "block updates k", r"$f(w_k) - f_*$",
           "E1: PD vs RPD, random least squares, S = 8 (mean and range over 3 seeds)")
    rows = [(label_of(s["config"]), f"{s['lr']:g}", fmt(s["final_mean"]), f"[{fmt(s['final_min'])}, {fmt(s['final_max'])}]",
             s["why"]) for s in sel]
    return table(rows, ["method", "chosen γ", "final f − f_* (mean)", "[min, max] over seeds", "selection"])


def time_experiment(sw, res, tag, title):
    sels = []
    for part in ("pd", "localsgd"):
        part_sel = select(sweep_dir(sw, f"{tag}_{part}"), x="time")
        part_sel.sort(key=lambda s: int(s["config"].get("method.local_steps", 0)))
        for s in part_sel:
            if part == "pd":
                s["config"] = {"method.name": "pipedream"}
            sels.append(s)
    budget = budget_of(sels[0]) if sels else 0.0
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s in sels:
        draw(ax, s)
    finish(fig, ax, os.path.join(res, f"{tag}.png"), "simulated time slots (one F or B of one micro-batch on one stage = 1)",
           r"$f(w) - f_*$", title)
    rows = [(label_of(s["config"]), f"{s['lr']:g}", fmt(s["final_mean"]), f"[{fmt(s['final_min'])}, {fmt(s['final_max'])}]",
             s["why"]) for s in sels]
    return table(rows, ["method", "chosen γ", f"final f − f_* at {budget:g} slots (mean)", "[min, max] over seeds",
                        "selection"])


def e4(sw, res):
    fig, ax = plt.subplots(figsize=(7, 4.8))
    rows = []
    budget = 0.0
    all_S = set()
    lo_all, hi_all = math.inf, 0.0
    for part, lab in (("pd", "PD"), ("rpd", "RPD δ = S² − S/2"), ("localsgd", "LocalSGD R = S, H = 5")):
        sel = select(sweep_dir(sw, f"e4_{part}"), x="k")
        sel.sort(key=lambda s: int(s["config"]["objective.stages"]))
        if sel:
            budget = budget_of(sel[0])
        S = np.array([int(s["config"]["objective.stages"]) for s in sel])
        m = np.array([s["final_mean"] for s in sel])
        lo = np.array([s["final_min"] for s in sel])
        hi = np.array([s["final_max"] for s in sel])
        all_S.update(S.tolist())
        lo_all, hi_all = min(lo_all, lo.min()), max(hi_all, hi.max())
        line, = ax.plot(S, m, "o-", label=lab)
        ax.fill_between(S, lo, hi, color=line.get_color(), alpha=0.15, lw=0)
        for s in sel:
            rows.append((lab, s["config"]["objective.stages"], f"{s['lr']:g}", fmt(s["final_mean"]),
                         f"[{fmt(s['final_min'])}, {fmt(s['final_max'])}]", int(float(s["rows"][0]["k"]))))
    ax.set_xscale("log", base=2)
    ticks = sorted(all_S)
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.xaxis.set_minor_locator(plt.NullLocator())
    ax.set_yscale("log")
    plain_log_ticks(ax, lo_all, hi_all)  # a decade or less of data: plain round numbers
    ax.set_xlabel("stages S")
    ax.set_ylabel(r"final $f(w) - f_*$ at the time budget")
    ax.set_title(f"E4: budget of {budget:g} time slots, logistic regression, gradient noise 0.5", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    caption(fig, f"A time slot is the simulated duration of one forward or one backward op of one micro-batch on one stage "
                 f"(unit costs).\nEach method runs every micro-batch whose timeline ends within {budget:g} slots; "
                 f"RPD runs PD's number of block updates. Mean and min–max over 3 seeds; γ chosen per S by the stable rule.")
    fig.savefig(os.path.join(res, "e4_budget_vs_stages.png"), dpi=130)
    provenance.written(os.path.join(res, "e4_budget_vs_stages.png"))
    return table(rows, ["method", "S", "chosen γ", "final f − f_* (mean)", "[min, max] over seeds", "block updates"])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", choices=["e1", "e2", "e3", "e4"])
    p.add_argument("--sweeps", default="sweeps", help="folder holding the sweep folders (default sweeps)")
    p.add_argument("--results", default="results")
    a = p.parse_args(argv)
    os.makedirs(a.results, exist_ok=True)
    if a.experiment == "e1":
        md = e1(a.sweeps, a.results)
    elif a.experiment == "e2":
        md = time_experiment(a.sweeps, a.results, "e2", "E2: PD vs LocalSGD, Nesterov quadratic, S = R = 16")
    elif a.experiment == "e3":
        md = time_experiment(a.sweeps, a.results, "e3", "E3: PD vs LocalSGD, logistic regression, S = R = 16")
    else:
        md = e4(a.sweeps, a.results)
    path = os.path.join(a.results, f"{a.experiment}_table.md")
    with open(path, "w") as f:
        f.write(md + "\n")
    provenance.written(path)
    print(md)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(run_cli(main))
