#!/usr/bin/env python3
"""Theory audits over sweeps (theory.md §3, §9), each writing a figure and a Markdown table
to results/:

  scripts/audits.py bound    [SWEEP_DIR ...]   measured (1/K)Σ‖∇f(w_k)‖² against the §3 bound
  scripts/audits.py delta    [SWEEP_DIR]       exponent of the stale excess in δ (≤ 2 predicted)
  scripts/audits.py stages   [SWEEP_DIR ...]   exponent of the stale excess in S (≤ 4 predicted)
  scripts/audits.py paci     [SWEEP_DIR]       measured crossings against ⌈(S−1−s)/a⌉, loss against a
  scripts/audits.py localsgd [SWEEP_DIR]       final error against H (the S³H²/K term)

The stale excess of a run is its (1/K)Σ‖∇f(w_k)‖² minus that of the δ = 0 run with the same
seed: stage, batch and delay draws come from separate streams, so the two runs share every
stage and batch draw (common random numbers) and the difference isolates the staleness.
Exponents are least-squares slopes in log–log with a 95% interval from a bootstrap over
seeds.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import h5py  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_h5 import load_run  # noqa: E402
from sweep_index import read_index  # noqa: E402

RNG = np.random.default_rng(0)


def runs_of(sweep_dir):
    for r in read_index(sweep_dir):
        if r["status"] not in ("ok", "diverged"):
            continue
        yield r, load_run(os.path.join(sweep_dir, r["path"]))


def fit_exponent(x, ys_by_seed, boot=2000):
    """Slope of log(mean y) on log x, and a 95% bootstrap interval over seeds.
    ys_by_seed: array [seeds, len(x)]; points with a non-positive mean are left out."""
    x = np.asarray(x, float)
    Y = np.asarray(ys_by_seed, float)

    def slope(Ym):
        m = Ym.mean(axis=0)
        ok = (m > 0) & np.isfinite(m)
        if ok.sum() < 2:
            return math.nan
        return float(np.polyfit(np.log(x[ok]), np.log(m[ok]), 1)[0])

    est = slope(Y)
    bs = [slope(Y[RNG.integers(0, len(Y), len(Y))]) for _ in range(boot)]
    bs = np.array([b for b in bs if math.isfinite(b)])
    lo, hi = (np.percentile(bs, [2.5, 97.5]) if len(bs) else (math.nan, math.nan))
    return est, float(lo), float(hi)


def save(fig, res, name):
    os.makedirs(res, exist_ok=True)
    fig.tight_layout()
    fig.savefig(os.path.join(res, name), dpi=130)


def write(res, name, text):
    with open(os.path.join(res, name), "w") as f:
        f.write(text + "\n")
    print(text)


# ---------------------------------------------------------------------------------------
def audit_bound(dirs, res):
    total = checked = outside = 0
    violations = []
    pts = []
    for d in dirs:
        if not os.path.exists(os.path.join(d, "index.csv")):
            continue
        for row, run in runs_of(d):
            if run.key("method.name") != "rpd" or not run.key("log.exact_mean"):
                continue
            total += 1
            th = run.theory
            if not int(th.get("lr_within_1_over_L", 0)):
                outside += 1
                continue
            checked += 1
            m, b, k = run.metrics["grad_norm_sq_mean"], run.metrics["bound"], run.metrics["k"]
            ok = np.isfinite(b) & (k > 0)
            ratio = m[ok] / b[ok]
            pts.append((float(b[ok][-1]), float(m[ok][-1]), float(th["delta"])))
            if np.any(ratio > 1):
                i = int(np.argmax(ratio))
                violations.append((d, row["run"], int(k[ok][i]), float(ratio[i]),
                                   {a: row[a] for a in row if "." in a or a == "seed"}))
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    if pts:
        P = np.array(pts)
        sc = ax.scatter(P[:, 0], P[:, 1], c=np.log10(1 + P[:, 2]), s=12, cmap="viridis")
        lim = [min(P[:, 1].min(), P[:, 0].min()), max(P[:, 0].max(), P[:, 1].max())]
        ax.plot(lim, lim, "k--", lw=1, label="measured = bound")
        fig.colorbar(sc, label="log10(1 + δ)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bound of §3 at K (exact L, f_*, δ; running G)")
    ax.set_ylabel("measured (1/K) Σ ‖∇f(w_k)‖²")
    ax.set_title("Bound audit: every RPD run with γ ≤ 1/L")
    ax.legend()
    save(fig, res, "audit_bound.png")
    ratios = [p[1] / p[0] for p in pts]
    lines = [
        "# Bound audit (theory.md §3)",
        "",
        f"RPD runs read: {total}; with γ ≤ 1/L (the bound's assumption) and checked at every logged K: {checked};"
        f" outside the assumption (γ > 1/L, not checked): {outside}.",
        f"Largest measured/bound ratio at the final K: {max(ratios):.3g}; median {np.median(ratios):.3g}." if ratios else "",
        "",
        f"Violations (measured > bound at some logged K): {len(violations)}.",
    ]
    if violations:
        lines += ["", "| sweep | run | K | measured/bound | config |", "|---|---|---|---|---|"]
        lines += [f"| {v[0]} | {v[1]} | {v[2]} | {v[3]:.3g} | {v[4]} |" for v in violations]
    lines += ["", f"Sweeps: {', '.join(dirs)}. Figure: audit_bound.png."]
    write(res, "audit_bound.md", "\n".join(lines))


# ---------------------------------------------------------------------------------------
def excess_table(dirs, x_key, variant_key):
    """{variant: {x: {seed: (gns_mean, stale_term)}}}: the measured (1/K)Σ‖∇f‖² of every run
    and the bound's stale term γ²L²δ²G² with the run's own δ and running G"""
    data = defaultdict(lambda: defaultdict(dict))
    for d in dirs:
        for row, run in runs_of(d):
            th = run.theory
            stale = float(th["lr"]) ** 2 * float(th["L"]) ** 2 * float(th["delta"]) ** 2 * float(th["G"]) ** 2
            data[variant_key(run)][int(run.key(x_key))][int(run.key("seed"))] = (
                float(run.metrics["grad_norm_sq_mean"][-1]), stale)
    return data


def positive_tail(xs, means):
    """the largest contiguous run of points, ending at the largest x, whose mean excess > 0"""
    i = len(xs)
    while i > 0 and means[i - 1] > 0:
        i -= 1
    return i


def excess_audit(data, base_name, xlabel, title, fig_name, md_name, header, sweeps, x_fmt=str):
    base = data.pop(base_name)
    fig, ax = plt.subplots(figsize=(6.2, 4.6))
    fits = ["| delays | fitted exponent (positive tail) | 95% interval (bootstrap over seeds) | range fitted |",
            "|---|---|---|---|"]
    rows = [f"| delays | {xlabel} | excess of (1/K)Σ‖∇f‖² over δ = 0, mean [min, max] | bound's stale term γ²L²δ²G² | excess ÷ stale term |",
            "|---|---|---|---|---|"]
    for v in sorted(data):
        by = data[v]
        xs = sorted(x for x in by if x in base and x > 0)
        seeds = sorted(set.intersection(*[set(by[x]) & set(base[x]) for x in xs]))
        E = np.array([[by[x][s][0] - base[x][s][0] for x in xs] for s in seeds])
        T = np.array([[by[x][s][1] for x in xs] for s in seeds])
        m = E.mean(axis=0)
        for i, x in enumerate(xs):
            ratio = m[i] / T[:, i].mean() if T[:, i].mean() > 0 else math.nan
            rows.append(f"| {v} | {x_fmt(x)} | {m[i]:+.4g} [{E[:, i].min():+.3g}, {E[:, i].max():+.3g}] | "
                        f"{T[:, i].mean():.4g} | {ratio:+.2e} |")
        i0 = positive_tail(xs, m)
        if len(xs) - i0 >= 2:
            est, lo, hi = fit_exponent(xs[i0:], E[:, i0:])
            fits.append(f"| {v} | {est:.3f} | [{lo:.3f}, {hi:.3f}] | {x_fmt(xs[i0])}..{x_fmt(xs[-1])} |")
            lab = f"{v}: slope {est:.2f} on {x_fmt(xs[i0])}..{x_fmt(xs[-1])}"
        else:
            fits.append(f"| {v} | n/a (fewer than 2 points with a positive excess) | | |")
            lab = f"{v}"
        line, = ax.plot(xs, np.abs(m), "o-", label=lab)
        neg = m < 0
        ax.plot(np.array(xs)[neg], np.abs(m)[neg], "o", mfc="white", color=line.get_color())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("|excess of (1/K)Σ‖∇f‖² over δ = 0|  (open: negative)")
    ax.set_title(title)
    ax.legend(fontsize=7)
    save(fig, res_dir[0], fig_name)
    text = "\n".join(header + ["", *fits, "", *rows, "", f"Sweeps: {', '.join(sweeps)}. Figure: {fig_name}."])
    write(res_dir[0], md_name, text)


res_dir = ["results"]


def audit_delta(d, res):
    res_dir[0] = res
    data = excess_table([d], "delay.max", lambda r: r.key("delay.name"))
    data["zero"] = {0: data["uniform"].pop(0)}
    data["constant"].pop(0, None)
    base = data["zero"][0]
    for v in list(data):
        if v != "zero":
            for x in data[v]:
                data[v][x] = data[v][x]
    zero_by_x = {x: base for v in data for x in data[v]}
    data["zero"] = zero_by_x
    excess_audit(data, "zero", "δ", "Stale excess against δ (S = 8, γ = 2^-7, K = 6400)", "audit_delta.png",
                 "audit_delta.md",
                 ["# δ-exponent audit (theory.md §3: the stale term of the bound is γ²L²δ²G²)", "",
                  "The excess is measured against the δ = 0 run with the same seed (common random numbers). "
                  "A negative excess means the stale run had the smaller mean squared gradient. The exponent is "
                  "fitted where the mean excess is positive, up to the largest δ."], [d])


def audit_stages(dirs, res):
    res_dir[0] = res

    def variant(r):
        name = r.key("delay.name")
        if name == "uniform" and int(r.key("delay.max")) == int(r.key("objective.stages")) ** 2 - 1:
            return "uniform, PD's mean (S² − 1)/2"
        return {"uniform": "uniform δ = S² − S/2", "constant": "constant δ = S² − S/2",
                "schedule": "PD exact table", "zero": "zero"}[name]
    excess_audit(excess_table(dirs, "objective.stages", variant), "zero", "S",
                 "Stale excess against S (K = 6400, γ = 2^-7)", "audit_stages.png", "audit_stages.md",
                 ["# S-exponent audit (theory.md §4: δ_PD = S² − S/2 makes the stale term Θ(γ²S⁴))", "",
                  "Excess over the δ = 0 run with the same S and seed. Worst case (constant δ at every read) against "
                  "mean behaviour (uniform draws, PipeDream's exact table) at the same S."], dirs)


def audit_paci(d, res):
    rows = []
    final = defaultdict(list)
    for row, run in runs_of(d):
        S, a = int(run.key("objective.stages")), int(run.key("method.accumulation"))
        with h5py.File(run.path, "r") as f:
            measured = f["schedule/max_crossed_measured"][()]
        bound = [math.ceil((S - 1 - s) / a) for s in range(S)]
        final[(S, a)].append(float(run.metrics["subopt"][-1]))
        if int(run.key("seed")) == 0:
            rows.append((S, a, list(map(int, measured)), bound, all(m <= b for m, b in zip(measured, bound)),
                         all(m == b for m, b in zip(measured, bound)), int(run.metrics["k"][-1])))
    rows.sort()
    lines = ["# PACI drift audit (theory.md §5: a micro-batch crosses ≤ ⌈(S − 1 − s)/a⌉ updates of stage s)", "",
             "| S | a | measured max crossings per stage | ⌈(S−1−s)/a⌉ | within | attained | block updates in 2400 slots | final f − f_* mean [min, max] |",
             "|---|---|---|---|---|---|---|---|"]
    for S, a, m, b, within, att, K in rows:
        v = final[(S, a)]
        lines.append(f"| {S} | {a} | {m} | {b} | {'yes' if within else 'NO'} | {'yes' if att else 'no'} | {K} |"
                     f" {np.mean(v):.4g} [{min(v):.3g}, {max(v):.3g}] |")
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for S in sorted({k[0] for k in final}):
        a_s = sorted(a for (s, a) in final if s == S)
        m = [np.mean(final[(S, a)]) for a in a_s]
        ax.plot(a_s, m, "o-", label=f"S = {S}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("accumulation a (micro-batches per stage step)")
    ax.set_ylabel("final f − f_* at 2400 slots")
    ax.set_title("PACI: final error against a (γ = 2^-7)")
    ax.legend()
    save(fig, res, "audit_paci.png")
    lines += ["", f"Sweep: {d} (3 seeds; crossings are the same for every seed). Figure: audit_paci.png."]
    write(res, "audit_paci.md", "\n".join(lines))


def audit_localsgd(d, res):
    by = defaultdict(dict)
    for row, run in runs_of(d):
        by[int(run.key("method.local_steps"))][int(run.key("seed"))] = float(run.metrics["subopt"][-1])
    Hs = sorted(by)
    seeds = sorted(by[Hs[0]])
    Y = np.array([[by[H][s] for H in Hs] for s in seeds])
    est, lo, hi = fit_exponent(Hs, Y)
    fig, ax = plt.subplots(figsize=(6, 4.2))
    ax.plot(Hs, Y.mean(axis=0), "o-")
    ax.fill_between(Hs, Y.min(axis=0), Y.max(axis=0), alpha=0.2)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("local steps H")
    ax.set_ylabel("final f − f_* at K = 25600")
    ax.set_title(f"LocalSGD, S = R = 8: final error against H (slope {est:.2f})")
    save(fig, res, "audit_localsgd.png")
    lines = ["# LocalSGD drift audit (theory.md §6: the S³H²/K term on the averaged model)", "",
             "| H | final f − f_* mean | [min, max] over seeds |", "|---|---|---|"]
    lines += [f"| {H} | {Y[:, i].mean():.4g} | [{Y[:, i].min():.3g}, {Y[:, i].max():.3g}] |" for i, H in enumerate(Hs)]
    lines += ["", f"Fitted exponent of the final error in H: {est:.3f} (95% interval [{lo:.3f}, {hi:.3f}]).",
              f"Sweep: {d}. Figure: audit_localsgd.png."]
    write(res, "audit_localsgd.md", "\n".join(lines))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("audit", choices=["bound", "delta", "stages", "paci", "localsgd"])
    p.add_argument("dirs", nargs="*")
    p.add_argument("--results", default="results")
    a = p.parse_args(argv)
    sw = "sweeps"
    if a.audit == "bound":
        audit_bound(a.dirs or [f"{sw}/e1", f"{sw}/audit_delta", f"{sw}/audit_stages", f"{sw}/audit_stages_mean"], a.results)
    elif a.audit == "delta":
        audit_delta((a.dirs or [f"{sw}/audit_delta"])[0], a.results)
    elif a.audit == "stages":
        audit_stages(a.dirs or [f"{sw}/audit_stages", f"{sw}/audit_stages_mean"], a.results)
    elif a.audit == "paci":
        audit_paci((a.dirs or [f"{sw}/audit_paci"])[0], a.results)
    else:
        audit_localsgd((a.dirs or [f"{sw}/audit_localsgd"])[0], a.results)


if __name__ == "__main__":
    main()
