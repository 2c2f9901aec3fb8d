#!/usr/bin/env python3
"""Markdown table of final metrics of run files, grouped by config keys: final f − f_*,
(1/K)Σ‖∇f(w_k)‖², the bound of docs/theory.md §3 and its stale term, each as mean [min, max]
over the runs of a group (seeds), with the group's step size and whether it satisfies the
bound's γ ≤ 1/L (NO marks the rows outside the assumption). A bound evaluated with an L estimated
along the run (an objective without a certified L: the char-level GPT; /theory/L_source) says
"(estimated L)" in its cell: the estimate is a lower one, so that bound is not certified.

  scripts/summarize_runs.py runs/*.h5 --group-by delay.max[,method.name] [--where key=value ...]
                            [-o table.md] [--command "how the runs were made"]

Prints to stdout; -o also writes the file. Diverged runs (status not ok, or f − f_* ending
above 1e6 × its start) are counted in the status column and left out of the metric columns.
The footer states only the constants that all runs share; a warning goes to stderr when a
group merges runs that differ in other keys than the seed.
"""
from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_analysis import filter_runs, group_runs, is_diverged, load_runs, parse_keys, parse_where, run_cli  # noqa: E402
from stale_analysis import provenance  # noqa: E402  (each result names the script that wrote it)
from stale_analysis.bound import L_estimated  # noqa: E402
from stale_analysis.grouping import fmt_value  # noqa: E402


def stat(values) -> str:
    v = np.array(values, dtype=float)
    if len(v) == 0:
        return "—"
    with np.errstate(all="ignore"):
        return f"{v.mean():.4g} [{v.min():.3g}, {v.max():.3g}]"


def common(runs, get) -> str | None:
    vals = {fmt_value(get(r)) for r in runs}
    return vals.pop() if len(vals) == 1 else None


def within(run) -> bool:
    """γ ≤ 1/L, the bound's step-size condition (/theory/lr_within_1_over_L; a file without it: no)."""
    return bool(int(run.theory.get("lr_within_1_over_L", 0)))


def within_cell(runs) -> str:
    """'yes', 'NO' (γ > 1/L: outside the bound's assumption), or 'NO for 2 of 3' in a mixed group."""
    n_out = sum(not within(r) for r in runs)
    return "yes" if n_out == 0 else "NO" if n_out == len(runs) else f"NO for {n_out} of {len(runs)}"


def table(groups, keys) -> list[str]:
    head = " | ".join(keys) if keys else "run"
    lines = [f"| {head} | γ | γ ≤ 1/L | runs | final f − f_* | (1/K)Σ‖∇f(w_k)‖² | bound (§3) | stale term γ²L²δ²G² | status |",
             "|" + "---|" * (len(keys or [0]) + 8)]
    for g in groups:
        good = [r for r in g.runs if not is_diverged(r)]
        m = [r.metrics for r in good]
        cells = [fmt_value(v) for v in g.values] if keys else [os.path.basename(g.values[0])]
        lrs = sorted({r.lr for r in g.runs})
        lr = ", ".join(f"{x:g}" for x in lrs)
        counts = {}
        for r in g.runs:
            s = "diverged" if is_diverged(r) else r.status
            counts[s] = counts.get(s, 0) + 1
        status = ", ".join(f"{s} {n}" for s, n in sorted(counts.items()))
        if g.mixed:
            status += " (mixed: " + ", ".join(g.mixed) + ")"
        def last(name):  # a metric a run does not log (e.g. no bound) counts as NaN
            return [x[name][-1] if name in x and len(x[name]) else math.nan for x in m]
        n_est = sum(L_estimated(r.theory) for r in g.runs)
        est = "" if n_est == 0 else " (estimated L)" if n_est == len(g.runs) else f" (estimated L in {n_est} of {len(g.runs)})"
        lines.append(
            f"| {' | '.join(cells)} | {lr} | {within_cell(g.runs)} | {len(g.runs)} | {stat(last('subopt'))}"
            f" | {stat(last('grad_norm_sq_mean'))} | {stat(last('bound'))}{est} | {stat(last('bound_stale'))}{est} | {status} |")
    return lines


def footer(runs) -> list[str]:
    facts = []
    for name, get in (("L", lambda r: float(r.theory.get("L", math.nan))),
                      ("f_*", lambda r: float(r.theory.get("f_star", math.nan))),
                      ("γ", lambda r: r.lr),
                      ("K", lambda r: int(r.theory.get("K", 0))),
                      ("S", lambda r: int(r.theory.get("S", 0)))):
        v = common(runs, get)
        if v is not None:
            facts.append(f"{name} = {v}")
        elif name == "γ":
            facts.append("γ varies (see the table)")
        else:
            vals = [get(r) for r in runs]
            facts.append(f"{name} ∈ [{fmt_value(min(vals))}, {fmt_value(max(vals))}] (varies by run)")
    n_est = sum(L_estimated(r.theory) for r in runs)
    if n_est:
        facts.append(f"L estimated along the run for {n_est} of {len(runs)} runs (a lower estimate of L: their bound "
                     "is an estimate, not a certified bound; /theory/L_source)")
    n_out = sum(not within(r) for r in runs)
    facts.append("γ ≤ 1/L for every run" if n_out == 0 else
                 f"γ > 1/L for {n_out} of {len(runs)} runs (the rows marked NO: outside the §3 bound's assumption)")
    lines = ["", "Mean [min, max] over the runs of a group that did not diverge. " + ", ".join(facts) + "."]
    v = common(runs, lambda r: f"{r.attrs.get('version')} (git {r.attrs.get('git_sha')})")
    lines.append(f"Harness version {v}." if v else "Runs come from different harness versions.")
    return lines


def same_for_every_seed(groups, keys) -> list[str]:
    """A line naming the groups whose runs differ in their seed but not in a bit of their loss
    series: the seed drew nothing there (PipeDream on a data file takes its batches in a fixed
    order), so the [min, max] over "seeds" is one run, not a spread."""
    names = []
    for g in groups:
        seeds = {r.flat.get("seed") for r in g.runs}
        if len(g.runs) < 2 or len(seeds) < 2:
            continue
        losses = [np.asarray(r.metrics["loss"]) for r in g.runs]
        if all(x.shape == losses[0].shape and np.array_equal(x, losses[0], equal_nan=True) for x in losses[1:]):
            names.append(", ".join(f"{k}={fmt_value(v)}" for k, v in zip(keys, g.values)) if keys else
                         os.path.basename(g.values[0]))
    if not names:
        return []
    return [f"The seed changes nothing in {len(names)} group(s) ({'; '.join(names)}): their runs of different "
            "seeds are bit-identical (nothing in the method or data is drawn from the seed), so their [min, max] "
            "is a single run, not a spread over seeds."]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run files (.h5), or sweep folders: the runs their index.csv lists")
    p.add_argument("--group-by", default=None, help="comma-separated config keys (default: one row per file)")
    p.add_argument("--where", action="append", help="keep only runs with key=value (repeatable)")
    p.add_argument("--command", default=None, help="the command that produced the runs (written under the table)")
    p.add_argument("-o", "--out", default=None, help="also write the table to this file")
    a = p.parse_args(argv)
    keys = parse_keys(a.group_by)
    runs = filter_runs(load_runs(a.runs), parse_where(a.where))
    groups = group_runs(runs, keys)
    lines = table(groups, keys) + footer(runs) + same_for_every_seed(groups, keys)
    if a.command:
        lines.append(f"Produced by `{a.command}`.")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text)
        provenance.written(a.out)
        print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(run_cli(main))
