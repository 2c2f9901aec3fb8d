#!/usr/bin/env python3
"""Figures and tables of the paper experiments E1–E4 (theory.md §8) from their sweeps.

  scripts/experiments.py e1|e2|e3|e4 [--sweeps sweeps] [--results results]

Each experiment's step size is chosen per configuration by the "stable" rule
(scripts/stepsize.py) on the mean curve over seeds; figures show the mean with the min–max
band over seeds; tables give final f − f_* (mean [min, max]) with the chosen γ. The text
block printed at the end is what results/REPRODUCTION.md quotes for the experiment.
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stepsize import select  # noqa: E402


def fmt(v):
    return "inf" if not math.isfinite(v) else f"{v:.4g}"


def label_of(cfg: dict) -> str:
    name = cfg.get("method.name", "")
    if name == "rpd" or cfg.get("delay.name") == "uniform":
        cyc = " (cyclic batches)" if cfg.get("method.batch_order") == "cyclic" else ""
        return f"RPD δ={cfg.get('delay.max')}{cyc}"
    if cfg.get("method.name") == "pipedream" or (not name and "delay.max" in cfg and cfg.get("delay.max") == "0"):
        return "PD"
    if "method.local_steps" in cfg:
        return f"LocalSGD H={cfg['method.local_steps']}"
    return ", ".join(f"{k}={v}" for k, v in cfg.items())


def draw(ax, sel, x_log=False):
    xs, mean, lo, hi, _ = sel["curve"]
    lab = f"{label_of(sel['config'])} (γ={sel['lr']:g})"
    line, = ax.plot(xs, mean, lw=1.5, label=lab)
    ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.15, lw=0)


def table(rows, header):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def e1(sw, res):
    sel = select(os.path.join(sw, "e1"))
    order = lambda s: (s["config"].get("method.name") != "pipedream", s["config"].get("method.batch_order") == "cyclic",  # noqa: E731
                       int(s["config"].get("delay.max", 0)))
    sel.sort(key=order)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s in sel:
        draw(ax, s)
    ax.set_yscale("log")
    ax.set_xlabel("block updates k")
    ax.set_ylabel(r"$f(w_k) - f_*$")
    ax.set_title("E1: PD vs RPD, random least squares, S = 8 (mean and range over 3 seeds)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(res, "e1_pd_vs_rpd.png"), dpi=130)
    rows = [(label_of(s["config"]), f"{s['lr']:g}", fmt(s["final_mean"]), f"[{fmt(s['final_min'])}, {fmt(s['final_max'])}]",
             s["why"]) for s in sel]
    return table(rows, ["method", "chosen γ", "final f − f_* (mean)", "[min, max] over seeds", "selection"])


def time_experiment(sw, res, tag, title):
    sels = []
    for part in ("pd", "localsgd"):
        d = os.path.join(sw, f"{tag}_{part}")
        part_sel = select(d, x="time")
        part_sel.sort(key=lambda s: int(s["config"].get("method.local_steps", 0)))
        for s in part_sel:
            if part == "pd":
                s["config"] = {"method.name": "pipedream"}
            sels.append(s)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for s in sels:
        draw(ax, s)
    ax.set_yscale("log")
    ax.set_xlabel("time slots")
    ax.set_ylabel(r"$f(w) - f_*$")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(res, f"{tag}.png"), dpi=130)
    rows = [(label_of(s["config"]), f"{s['lr']:g}", fmt(s["final_mean"]), f"[{fmt(s['final_min'])}, {fmt(s['final_max'])}]",
             s["why"]) for s in sels]
    return table(rows, ["method", "chosen γ", "final f − f_* at 1230 slots (mean)", "[min, max] over seeds", "selection"])


def e4(sw, res):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    rows = []
    for part, lab in (("pd", "PD"), ("rpd", "RPD δ = S² − S/2"), ("localsgd", "LocalSGD R = S, H = 5")):
        sel = select(os.path.join(sw, f"e4_{part}"), x="k")
        sel.sort(key=lambda s: int(s["config"]["objective.stages"]))
        S = np.array([int(s["config"]["objective.stages"]) for s in sel])
        m = np.array([s["final_mean"] for s in sel])
        lo = np.array([s["final_min"] for s in sel])
        hi = np.array([s["final_max"] for s in sel])
        line, = ax.plot(S, m, "o-", label=lab)
        ax.fill_between(S, lo, hi, color=line.get_color(), alpha=0.15, lw=0)
        for s in sel:
            rows.append((lab, s["config"]["objective.stages"], f"{s['lr']:g}", fmt(s["final_mean"]),
                         f"[{fmt(s['final_min'])}, {fmt(s['final_max'])}]", int(float(s["rows"][0]["k"]))))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("stages S")
    ax.set_ylabel(r"final $f(w) - f_*$ at 3180 slots")
    ax.set_title("E4: fixed time budget, logistic regression, gradient noise 0.5")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(res, "e4_budget_vs_stages.png"), dpi=130)
    return table(rows, ["method", "S", "chosen γ", "final f − f_* (mean)", "[min, max] over seeds", "block updates"])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("experiment", choices=["e1", "e2", "e3", "e4"])
    p.add_argument("--sweeps", default="sweeps")
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
    print(md)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
