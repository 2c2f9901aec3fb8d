#!/usr/bin/env python3
"""Theory audits over sweeps (docs/theory.md §3, §9), each writing a figure and a Markdown
table to RESULTS/ (default results/) and printing the table:

  scripts/audits.py bound    [SWEEP_DIR ...]   measured (1/K)Σ‖∇f(w_k)‖² against the §3 bound, every method
  scripts/audits.py delta    [SWEEP_DIR]       exponent of the stale excess in δ (≤ 2 predicted)
  scripts/audits.py stages   [SWEEP_DIR ...]   exponent of the stale excess in S (≤ 4 predicted)
  scripts/audits.py paci     [SWEEP_DIR]       measured crossings against ⌈(S−1−s)/a⌉, loss against a
  scripts/audits.py localsgd [SWEEP_DIR]       final error against H (the S³H²/K term)
  scripts/audits.py nonconvex [SWEEP_DIR]      the §3 bound on nonconvex logistic (w7a, phishing): violations, term shares
  scripts/audits.py charlm   [SWEEP_DIR]       the §3 bound on the char-GPT with an ESTIMATED L: violations, term tightness
  scripts/audits.py tuned    [SWEEP_DIR]       the tuned rate γ = min{1/L, √(2Δ₀/(LG²K))} over K, per S
  scripts/audits.py delta-regime  [SWEEP_DIR]  δ law with K = 50δ (δ ≪ K), bootstrap over seeds and points
  scripts/audits.py stages-regime [SWEEP_DIR ...]  S law with K = 50·δ_PD(S), PD's own tables included
  scripts/audits.py localsgd-sh   [SWEEP_DIR]  LocalSGD's excess over H = 1 with S and H varied
  scripts/audits.py informative [SWEEP_DIR ...]  rows 1-2 where the bound can fail: c + c²δ²/S < 1, G fixed by a
                                               pilot, the mean over 20 seeds against it (scripts/audit_informative.py)
  scripts/audits.py nonconvex-plan | tuned-plan | informative-plan
                                               write experiments/audit_nonconvex_sweep.toml /
                                               audit_tuned_rate_sweep.toml (γ from L, Δ₀ and a pilot G)

Default folders are those `build/stale sweep experiments/<name>.toml` writes (sweeps/e1_sweep,
sweeps/audit_delta_sweep, …; the short names of older runs, sweeps/e1, sweeps/audit_delta, …,
are accepted too).

The stale excess of a run is its (1/K)Σ‖∇f(w_k)‖² minus that of the δ = 0 run with the same
seed: stage, batch and delay draws come from separate streams, so the two runs share every
stage and batch draw (common random numbers) and the difference isolates the staleness.
Exponents are least-squares slopes in log–log with a 95% interval from a bootstrap over
seeds. The bound audit reads every run of every method (each with its own δ, shown per method
in the legend); diverged runs (status not ok, or f − f_* ending above 1e6 × its start), runs
with γ > 1/L and runs with a sampled mean are left out of its check and counted in its caption.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_analysis import (AnalysisError, find_sweep, fit_exponent, load_run, positive_tail,  # noqa: E402
                            read_index, run_cli)
from stale_analysis import provenance  # noqa: E402  (each result names the script that wrote it)
from stale_analysis.bound import REACH, bound_runs, method_table, plot_bound  # noqa: E402
from stale_analysis.fits import r_squared  # noqa: E402
from stale_analysis.plotting import caption, plain_log_ticks, plt, pow2_tex  # noqa: E402
import audit_informative  # noqa: E402
import audits_regime  # noqa: E402


def runs_of(sweep_dir):
    for r in read_index(sweep_dir):
        if r["status"] not in ("ok", "diverged"):
            continue
        yield r, load_run(os.path.join(sweep_dir, r["path"]))


def default_dir(root, stem):
    return find_sweep(root, [f"{stem}_sweep", stem], f"experiments/{stem}_sweep.toml --out {root}/{stem}_sweep")


def save(fig, res, name):
    os.makedirs(res, exist_ok=True)
    fig.savefig(os.path.join(res, name), dpi=130)
    provenance.written(os.path.join(res, name))


def write(res, name, text):
    with open(os.path.join(res, name), "w") as f:
        f.write(text + "\n")
    provenance.written(os.path.join(res, name))
    print(text)


# ---------------------------------------------------------------------------------------
def audit_bound(dirs, res):
    """Every run of every method (stale_analysis.bound): checked at every logged K where γ ≤ 1/L,
    the mean is exact and the run did not diverge; the others counted by reason."""
    runs = bound_runs(dirs)
    checked = [r for r in runs if r.checked]
    outside = sum(r.why_not_checked == "γ > 1/L" for r in runs)
    sampled = sum(r.why_not_checked == "sampled mean" for r in runs)
    diverged = [r for r in runs if r.why_not_checked == "diverged"]
    div_ratio = max((r.worst[1] for r in diverged if math.isfinite(r.worst[1])), default=0.0)
    violations = [r for r in checked if r.violated]
    methods = method_table(runs)
    fig, ax = plt.subplots(figsize=(6.2, 5.2))
    plot_bound(ax, runs)
    ax.set_title(r"Bound audit: every method, runs with $\gamma \leq 1/L$", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    caption(fig, f"{len(checked)} runs drawn; left out: {len(diverged)} diverged (f − f* above 1e6 × its start or status "
                 f"not ok),\n{outside} with γ > 1/L (outside the bound's assumption)"
                 + (f", {sampled} with a sampled mean (log.exact_mean = false)" if sampled else "") + ".")
    save(fig, res, "audit_bound.png")
    ratios = [r.final_ratio for r in checked]
    replicates = [r for r in checked if r.same_as is not None]
    lines = [
        "# Bound audit (docs/theory.md §3)",
        "",
        *([f"Seed replicates: {len(replicates)} of the {len(checked)} checked runs repeat another run of their sweep bit "
           f"for bit under another seed (a deterministic method on fixed data: {', '.join(sorted({r.method for r in replicates}))}); "
           f"they are {len(checked) - len(replicates)} distinct runs, and a count of seeds is not a count of evidence there.",
           ""] if replicates else []),
        f"Runs read (every method): {len(runs)}; checked at every logged K: {len(checked)}; outside the assumption "
        f"(γ > 1/L, not checked): {outside};"
        + (f" with a sampled mean (log.exact_mean = false, not checked): {sampled};" if sampled else "")
        + f" diverged with γ ≤ 1/L (f − f_* above 1e6 × its start or status not ok; not checked): {len(diverged)}."
        + (f" The diverged runs stay below the bound too (largest measured/bound ratio {div_ratio:.3g}), but only"
           " because the running G in the bound explodes with them." if diverged else ""),
        f"Largest measured/bound ratio at the final K: {max(ratios):.3g}; median {np.median(ratios):.3g}." if ratios else "",
        "",
        f"Checks that could have failed (informative) against checks passed by construction (vacuous: the bound lies "
        f"at or above S·G_K², the ceiling the running G sets for the measured mean, and the measured mean is below "
        f"{REACH:g}·S·G_K²; stale_analysis/bound.py): {sum(r.informative_checks for r in checked)} informative, "
        f"{sum(r.vacuous_checks for r in checked)} vacuous; runs with no informative check: "
        f"{sum(r.informative_checks == 0 for r in checked)} of {len(checked)}. Only informative checks carry a verdict.",
        "",
        "| method | δ of the bound | runs | checked | γ > 1/L | diverged | violations | measured/bound at the final K: max, median |"
        " informative checks | vacuous checks | runs with an informative check | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [f"| {m['method']} | {m['delta']} | {m['runs']} | {m['checked']} | {m['lr_above_1_over_L']} | {m['diverged']} |"
              f" {m['violations']} | {m['max_final_ratio']:.3g}, {m['median_final_ratio']:.3g} | {m['informative']} |"
              f" {m['vacuous']} | {m['runs_informative']} | {m['verdict']} |" for m in methods]
    lines += ["", f"Violations (measured > bound at some logged K): {len(violations)}."]
    if violations:
        lines += ["", "| sweep | run | method | K | measured/bound | config |", "|---|---|---|---|---|---|"]
        lines += [f"| {v.sweep} | {v.run} | {v.method} | {v.worst[0]} | {v.worst[1]:.3g} | {v.axes} |" for v in violations]
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


# one marker and line style per series, so that series lying on top of each other stay visible
STYLES = [dict(marker="o", ls="-", ms=7), dict(marker="s", ls="--", ms=5), dict(marker="^", ls=":", ms=5),
          dict(marker="x", ls="-.", ms=6)]


def excess_audit(data, base, res, xlabel, title, fig_name, md_name, header, sweeps, note="", predicted=None):
    """data: {variant: {x: {seed: (value, stale term)}}}; base: {x: {seed: (value, _)}};
    predicted: (exponent, label): a reference line of the theory's slope through the largest
    positive mean excess, so the figure reads without its table"""
    fig, ax = plt.subplots(figsize=(6.4, 5.0))
    anchor = None  # (x, excess) of the largest x with a positive mean excess, over the variants
    fits = ["| delays | fitted exponent (positive tail) | 95% interval (bootstrap over seeds) | range fitted |",
            "|---|---|---|---|"]
    rows = [f"| delays | {xlabel} | excess of (1/K)Σ‖∇f‖² over δ = 0, mean [min, max] | bound's stale term γ²L²δ²G² | excess ÷ stale term |",
            "|---|---|---|---|---|"]
    for i, v in enumerate(sorted(data)):
        by = data[v]
        xs = sorted(x for x in by if x in base and x > 0)
        if not xs:
            continue
        seeds = sorted(set.intersection(*[set(by[x]) & set(base[x]) for x in xs]))
        E = np.array([[by[x][s][0] - base[x][s][0] for x in xs] for s in seeds])
        T = np.array([[by[x][s][1] for x in xs] for s in seeds])
        m = E.mean(axis=0)
        for j, x in enumerate(xs):
            ratio = m[j] / T[:, j].mean() if T[:, j].mean() > 0 else math.nan
            rows.append(f"| {v} | {x} | {m[j]:+.4g} [{E[:, j].min():+.3g}, {E[:, j].max():+.3g}] | "
                        f"{T[:, j].mean():.4g} | {ratio:+.2e} |")
        i0 = positive_tail(xs, m)
        if len(xs) - i0 >= 2:
            est, lo, hi = fit_exponent(xs[i0:], E[:, i0:])
            fits.append(f"| {v} | {est:.3f} | [{lo:.3f}, {hi:.3f}] | {xs[i0]}..{xs[-1]} |")
            lab = f"{v}: slope {est:.2f} on {xs[i0]}..{xs[-1]}"
        else:
            fits.append(f"| {v} | n/a (fewer than 2 points with a positive excess) | | |")
            lab = f"{v}"
        st = STYLES[i % len(STYLES)]
        pos = [j for j in range(len(xs)) if m[j] > 0]
        if pos and (anchor is None or xs[pos[-1]] > anchor[0] or (xs[pos[-1]] == anchor[0] and m[pos[-1]] > anchor[1])):
            anchor = (xs[pos[-1]], m[pos[-1]])
        line, = ax.plot(xs, np.abs(m), label=lab, lw=1.3, **st)
        neg = m < 0
        ax.plot(np.array(xs)[neg], np.abs(m)[neg], st["marker"], ms=st["ms"], mfc="white", color=line.get_color(), ls="none")
    if predicted and anchor:
        exponent, label = predicted
        allx = sorted({x for v in data for x in data[v] if x > 0})
        xr = np.array([allx[0], allx[-1]], dtype=float)
        ax.plot(xr, anchor[1] * (xr / anchor[0]) ** exponent, color="0.45", lw=1.0, ls=(0, (6, 3)), zorder=0,
                label=f"{label}: slope {exponent:g}, through the largest positive excess")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(r"|excess of $\frac{1}{K}\sum\|\nabla f\|^2$ over $\delta = 0$|  (open: negative)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout(rect=(0, 0.05 if note else 0, 1, 1))
    caption(fig, note)
    save(fig, res, fig_name)
    text = "\n".join(header + ["", *fits, "", *rows, "", f"Sweeps: {', '.join(sweeps)}. Figure: {fig_name}."])
    write(res, md_name, text)


def audit_delta(d, res):
    data = excess_table([d], "delay.max", lambda r: r.key("delay.name"))
    if 0 not in data.get("uniform", {}):
        raise AnalysisError(f"{d}: no δ = 0 runs (delay.name = uniform, delay.max = 0) to measure the excess against")
    zero = data["uniform"].pop(0)
    data.get("constant", {}).pop(0, None)
    base = {x: zero for v in data for x in data[v]}
    run0 = next(run for _, run in runs_of(d))
    S, lr, K = int(run0.key("objective.stages")), float(run0.key("method.lr")), int(run0.key("method.updates"))
    excess_audit(data, base, res, "δ", rf"Stale excess against $\delta$ ($S$ = {S}, $\gamma$ = {pow2_tex(lr)}, $K$ = {K})",
                 "audit_delta.png", "audit_delta.md",
                 ["# δ-exponent audit (docs/theory.md §3: the stale term of the bound is γ²L²δ²G²)", "",
                  "The excess is measured against the δ = 0 run with the same seed (common random numbers). "
                  "A negative excess means the stale run had the smaller mean squared gradient. The exponent is "
                  "fitted where the mean excess is positive, up to the largest δ."], [d],
                 predicted=(2, "theory: stale term γ²L²δ²G²"))


def audit_stages(dirs, res):
    def variant(r):
        name = r.key("delay.name")
        if name == "uniform" and int(r.key("delay.max")) == int(r.key("objective.stages")) ** 2 - 1:
            return "uniform, PD's mean (S² − 1)/2"
        return {"uniform": "uniform δ = S² − S/2", "constant": "constant δ = S² − S/2",
                "schedule": "PD exact table", "zero": "zero"}[name]
    data = excess_table(dirs, "objective.stages", variant)
    if "zero" not in data:
        raise AnalysisError(f"{', '.join(dirs)}: no delay.name = zero runs to measure the excess against")
    base = data.pop("zero")
    run0 = next(run for _, run in runs_of(dirs[0]))
    lr, K = float(run0.key("method.lr")), int(run0.key("method.updates"))
    note = ("The two uniform variants nearly coincide (markers ▲ and ×): uniform draws on 0..S² − S/2 and on\n"
            "0..S² − 1 have means S²/2 − S/4 and (S² − 1)/2 (PD's mean), within a few % of each other.")
    excess_audit(data, base, res, "S", rf"Stale excess against $S$ ($K$ = {K}, $\gamma$ = {pow2_tex(lr)})",
                 "audit_stages.png", "audit_stages.md",
                 ["# S-exponent audit (docs/theory.md §4: δ_PD = S² − S/2 makes the stale term Θ(γ²S⁴))", "",
                  "Excess over the δ = 0 run with the same S and seed. Worst case (constant δ at every read) against "
                  "mean behaviour (uniform draws, PipeDream's exact table) at the same S."], dirs, note,
                 predicted=(4, "theory: stale term Θ(γ²S⁴)"))


def audit_paci(d, res):
    rows = []
    final = defaultdict(list)
    budget, lr = 0.0, math.nan
    for row, run in runs_of(d):
        S, a = int(run.key("objective.stages")), int(run.key("method.accumulation"))
        budget, lr = float(run.key("method.time_budget")), float(run.key("method.lr"))
        measured = run.dataset("schedule/max_crossed_measured")
        bound = [math.ceil((S - 1 - s) / a) for s in range(S)]
        final[(S, a)].append(float(run.metrics["subopt"][-1]))
        if int(run.key("seed")) == 0:
            rows.append((S, a, list(map(int, measured)), bound, all(m <= b for m, b in zip(measured, bound)),
                         all(m == b for m, b in zip(measured, bound)), int(run.metrics["k"][-1])))
    rows.sort()
    lines = ["# PACI drift audit (docs/theory.md §5: a micro-batch crosses ≤ ⌈(S − 1 − s)/a⌉ updates of stage s)", "",
             f"| S | a | measured max crossings per stage | ⌈(S−1−s)/a⌉ | within | attained | block updates in {budget:g} slots | final f − f_* mean [min, max] |",
             "|---|---|---|---|---|---|---|---|"]
    for S, a, m, b, within, att, K in rows:
        v = final[(S, a)]
        lines.append(f"| {S} | {a} | {m} | {b} | {'yes' if within else 'NO'} | {'yes' if att else 'no'} | {K} |"
                     f" {np.mean(v):.4g} [{min(v):.3g}, {max(v):.3g}] |")
    fig, ax = plt.subplots(figsize=(6.2, 4.8))
    for i, S in enumerate(sorted({k[0] for k in final})):
        a_s = sorted(a for (s, a) in final if s == S)
        m = [np.mean(final[(S, a)]) for a in a_s]
        st = STYLES[i % len(STYLES)]
        ax.plot(a_s, m, label=f"S = {S}", lw=1.3, **st)
    ax.set_xscale("log", base=2)
    a_all = sorted({a for (_, a) in final})
    ax.set_xticks(a_all, [str(a) for a in a_all])
    ax.set_yscale("log")
    ax.set_xlabel("accumulation a (micro-batches per stage step)")
    ax.set_ylabel(rf"final $f - f_*$ at {budget:g} slots (mean over seeds)")
    ax.set_title(rf"PACI: final error against $a$ ($\gamma$ = {pow2_tex(lr)})", fontsize=10)
    ax.legend()
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    caption(fig, "S = 4 and S = 8 lie on top of each other: without a bubble the pipeline finishes one micro-batch per\n"
                 "2 slots whatever S, so both process the same micro-batches and every block steps once per a of them —\n"
                 "nearly the same SGD trajectory; the drift ⌈(S−1−s)/a⌉ (table) changes the error only slightly.")
    save(fig, res, "audit_paci.png")
    lines += ["", "S = 4 and S = 8 end at nearly the same error for every a: at a fixed slot budget each stage makes the "
              "same number of optimizer steps whatever S (one micro-batch finishes every 2 slots; the block-update count "
              "doubles with S because there are twice as many blocks), so the figure shows the cost of stepping 1/a as "
              "often, not the drift.",
              "", f"Sweep: {d} (3 seeds; crossings are the same for every seed). Figure: audit_paci.png."]
    write(res, "audit_paci.md", "\n".join(lines))


def audit_localsgd(d, res):
    by = defaultdict(dict)
    K, S, lr = 0, 0, math.nan
    for row, run in runs_of(d):
        by[int(run.key("method.local_steps"))][int(run.key("seed"))] = float(run.metrics["subopt"][-1])
        K, S, lr = int(run.key("method.updates")), int(run.key("objective.stages")), float(run.key("method.lr"))
    Hs = sorted(by)
    seeds = sorted(by[Hs[0]])
    Y = np.array([[by[H][s] for H in Hs] for s in seeds])
    m = Y.mean(axis=0)
    est, lo, hi = fit_exponent(Hs, Y)
    r2 = r_squared(Hs, m)
    flat = 0
    while flat + 1 < len(Hs) and abs(m[flat + 1] / m[0] - 1) <= 0.05:
        flat += 1
    fig, ax = plt.subplots(figsize=(6.2, 4.6))
    ax.plot(Hs, m, "o-")
    ax.fill_between(Hs, Y.min(axis=0), Y.max(axis=0), alpha=0.2)
    ax.set_xscale("log", base=2)
    ax.set_xticks(Hs, [str(h) for h in Hs])
    ax.set_yscale("log")
    ax.set_xlabel("local steps H")
    plain_log_ticks(ax, float(Y.min()), float(Y.max()))
    ax.set_ylabel(rf"final $f - f_*$ at $K$ = {K}")
    ax.set_title(rf"LocalSGD, $S = R$ = {S}, $\gamma$ = {pow2_tex(lr)}: final error against $H$", fontsize=10)
    if flat > 0 and flat + 1 < len(Hs):
        shape = (f"flat (within 5%) for H ≤ {Hs[flat]}, then ×{m[-1] / m[flat]:.2f} by H = {Hs[-1]}: "
                 f"not a power law in H, so no slope is quoted (log–log fit R² = {r2:.2f})")
    else:
        shape = f"log–log slope {est:.2f} (95% interval [{lo:.2f}, {hi:.2f}], R² = {r2:.2f})"
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    caption(fig, shape + ".\nMean and min–max over seeds.")
    save(fig, res, "audit_localsgd.png")
    lines = ["# LocalSGD drift audit (docs/theory.md §6: the S³H²/K term on the averaged model)", "",
             "| H | final f − f_* mean | [min, max] over seeds |", "|---|---|---|"]
    lines += [f"| {H} | {Y[:, i].mean():.4g} | [{Y[:, i].min():.3g}, {Y[:, i].max():.3g}] |" for i, H in enumerate(Hs)]
    lines += ["", f"Shape: {shape}.",
              f"Least-squares exponent over all H, for reference: {est:.3f} (95% interval [{lo:.3f}, {hi:.3f}]).",
              f"Sweep: {d}. Figure: audit_localsgd.png."]
    write(res, "audit_localsgd.md", "\n".join(lines))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("audit", choices=["bound", "delta", "stages", "paci", "localsgd", "nonconvex", "charlm", "tuned", "delta-regime",
                                     "stages-regime", "localsgd-sh", "nonconvex-plan", "tuned-plan", "informative",
                                     "informative-plan"])
    p.add_argument("dirs", nargs="*", help="sweep folders (default: the ones named above, under --sweeps)")
    p.add_argument("--sweeps", default="sweeps", help="folder holding the sweep folders (default sweeps)")
    p.add_argument("--results", default="results")
    a = p.parse_args(argv)
    for d in a.dirs:
        read_index(d)  # one-line error for a folder that is not a sweep
    sw = a.sweeps
    if a.audit == "nonconvex-plan":
        audits_regime.plan_nonconvex("experiments/audit_nonconvex_sweep.toml")
    elif a.audit == "tuned-plan":
        audits_regime.plan_tuned("experiments/audit_tuned_rate_sweep.toml")
    elif a.audit == "informative-plan":
        audit_informative.plan()
    elif a.audit == "informative":
        audit_informative.audit(a.dirs or audit_informative.sweep_dirs(sw), a.results)
    elif a.audit == "nonconvex":
        audits_regime.audit_nonconvex((a.dirs or [default_dir(sw, "audit_nonconvex")])[0], a.results)
    elif a.audit == "charlm":
        audits_regime.audit_charlm((a.dirs or [default_dir(sw, "audit_charlm")])[0], a.results)
    elif a.audit == "tuned":
        audits_regime.audit_tuned((a.dirs or [default_dir(sw, "audit_tuned_rate")])[0], a.results)
    elif a.audit == "delta-regime":
        audits_regime.audit_delta_regime((a.dirs or [default_dir(sw, "audit_delta_regime")])[0], a.results)
    elif a.audit == "stages-regime":
        audits_regime.audit_stages_regime(a.dirs or [default_dir(sw, "audit_stages_regime"), default_dir(sw, "audit_stages_capped")],
                                          a.results)
    elif a.audit == "localsgd-sh":
        audits_regime.audit_localsgd_sh((a.dirs or [default_dir(sw, "audit_localsgd_sh")])[0], a.results)
    elif a.audit == "bound":
        dirs = a.dirs or [default_dir(sw, s) for s in ("e1", "audit_delta", "audit_stages", "audit_stages_mean")]
        audit_bound(dirs, a.results)
    elif a.audit == "delta":
        audit_delta((a.dirs or [default_dir(sw, "audit_delta")])[0], a.results)
    elif a.audit == "stages":
        audit_stages(a.dirs or [default_dir(sw, "audit_stages"), default_dir(sw, "audit_stages_mean")], a.results)
    elif a.audit == "paci":
        audit_paci((a.dirs or [default_dir(sw, "audit_paci")])[0], a.results)
    else:
        audit_localsgd((a.dirs or [default_dir(sw, "audit_localsgd")])[0], a.results)


if __name__ == "__main__":
    sys.exit(run_cli(main))
