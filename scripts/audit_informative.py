"""The §3 bound where it can fail (issue 53): THEORY.md rows 1 and 2 made informative.

    python3 scripts/audits.py informative-plan   # experiments/audit_informative_sweep_{convex,nonconvex}.toml
    build/stale sweep experiments/audit_informative_sweep_convex.toml --jobs 2 \
        --out sweeps/audit_informative_convex_sweep                 # and the same for _nonconvex
    python3 scripts/audits.py informative        # results/audit_informative.md and .png

Why a sweep of its own. With the running G_K in the bound, its G-terms are (c + c²δ²/S)·S·G_K²
(c = γL), and S·G_K² is the measured mean's own ceiling, so where c + c²δ²/S ≥ 1 the check
cannot fail (stale_analysis/bound.py, check_labels). Every run of the nonconvex audit (row 2) had
c + c²δ²/S ≥ 4.25. Here every configuration has c + c²δ²/S < 1: S = 4 with PipeDream's whole-run
δ = 16 at c ∈ {2⁻⁴, 2⁻⁵} (0.31, 0.094) and S = 8 with δ = 72 at c ∈ {2⁻⁵, 2⁻⁶} (0.66, 0.17), on
L2-regularised logistic regression on phishing, convex (row 1), and with the nonconvex
regulariser λΣw²/(1+w²), λ = 0.1 (row 2), RPD with uniform delays and with PipeDream's exact table, K = 8000.

The theorem's form. It fixes G before the run and bounds an expectation. So each configuration
runs a pilot (seed 1000) whose final running G is the configuration's G, fixed in advance for
its 20 seeds (0 … 19): the bound with that G is bound_opt + (bound_stoch + bound_stale)·(G/G_K)²
from the logged terms, and the verdict compares the mean over the 20 seeds of the measured
(1/K)Σ‖∇f(w_k)‖² with it through a one-sided 95 % upper confidence bound, simultaneous over the
informative K (stale_analysis.law_verdicts.level_verdict). Whether the pilot's G bounds a run's
own block gradients (the theorem's hypothesis) is counted, not assumed. The per-run checks with
the running G are reported beside, labelled informative or vacuous as in the bound audit.
"""
from __future__ import annotations

import math
import os
from collections import defaultdict

import numpy as np

from audits_regime import pd_delta, runs_of, save, theory_of, write
from stale_analysis.bound import REACH, check_labels
from stale_analysis import provenance  # noqa: E402  (each result names the script that wrote it)
from stale_analysis.formatting import number
from stale_analysis.law_verdicts import level_verdict
from stale_analysis.plotting import caption, plt

SWEEP = "experiments/audit_informative_sweep.toml"
# name -> (stem of its sweep, base config, its overrides). The data are fixed across seeds, as the
# theorem's expectation is over the method's draws for one f: E1's random least squares draws its
# data from the seed, so the convex problem is L2-regularised logistic regression on phishing
PROBLEMS = {
    "logistic, phishing, convex (λ = 0)": ("convex", "audit_nonconvex_base.toml",
                                            ['"objective.storage" = "dense"', '"objective.nonconvex_reg" = 0.0']),
    "logistic + λΣw²/(1+w²), phishing, λ = 0.1": ("nonconvex", "audit_nonconvex_base.toml",
                                                 ['"objective.storage" = "dense"', '"objective.nonconvex_reg" = 0.1']),
}
C_OF_S = {4: [2.0 ** -4, 2.0 ** -5], 8: [2.0 ** -5, 2.0 ** -6]}
DELAYS = ["uniform", "schedule"]
SEEDS = list(range(20))
PILOT_SEED = 1000
K = 8000
EVERY = 80


def gterm_factor(c: float, delta: int, S: int) -> float:
    """c + c²δ²/S: the bound's G-terms over S·G²; below 1 the check with the running G can fail"""
    return c + c * c * delta * delta / S


def plan(out_toml=SWEEP):
    """experiments/audit_informative_sweep_{convex,nonconvex}.toml (a sweep has one base);
    L comes from a one-update probe of each problem (its /theory/L)."""
    zipped = defaultdict(list)
    notes = []
    for name, (_, base, extra) in PROBLEMS.items():
        overrides = [o.replace('"', "").replace(" = ", "=") for o in extra]
        L = float(theory_of(os.path.join("experiments", base), overrides)["L"])
        notes.append(f"#   {name}: L = {L:.6g} ({base})")
        for S, cs in C_OF_S.items():
            for c in cs:
                for dname in DELAYS:
                    zipped['"problem"'].append(f'"{name}"')
                    zipped['"objective.stages"'].append(str(S))
                    zipped['"method.lr"'].append(repr(c / L))
                    zipped['"delay.name"'].append(f'"{dname}"')
                    zipped['"delay.max"'].append(str(pd_delta(S)))
    lines = ["# The §3 bound where it can fail (issue 53), written by `python3 scripts/audits.py informative-plan`",
             "# (scripts/audit_informative.py says why): c = γL with c + c²δ²/S < 1, RPD with uniform delays and",
             "# PipeDream's exact table at δ = 5S²/4 − S, 20 seeds and a pilot (seed 1000) whose running G is the",
             "# configuration's G fixed in advance. A sweep has one base: one file per problem.",
             *notes]
    # one sweep file per problem, each with its own base (a sweep has one base)
    written = []
    for name, (stem, base, extra) in PROBLEMS.items():
        idx = [i for i, p in enumerate(zipped['"problem"']) if p == f'"{name}"']
        path = out_toml.replace(".toml", f"_{stem}.toml")
        body = lines + [f'base = "{base}"', 'unread = "drop"', "", "[set]",
                        '"method.name" = "rpd"', f'"method.updates" = {K}', f'"log.every" = {EVERY}',
                        '"log.exact_mean" = true', '"log.iterates_every" = 0', *extra, "", "[grid]",
                        f"seed = {SEEDS + [PILOT_SEED]}", "", "[zip]"]
        body += [f"{k} = [{', '.join(v[i] for i in idx)}]" for k, v in zipped.items() if k != '"problem"']
        with open(path, "w") as f:
            f.write("\n".join(body) + "\n")
        provenance.written(path)
        written.append(path)
    print("wrote " + ", ".join(written))
    return written


def sweep_dirs(root="sweeps"):
    return [os.path.join(root, f"audit_informative_{stem}_sweep") for stem, _, _ in PROBLEMS.values()]


def _group_of(run):
    th = run.theory
    S, delta = int(th["S"]), int(round(float(th["delta"])))
    c = float(th["lr"]) * float(th["L"])
    problem = next(name for name, (_, _, extra) in PROBLEMS.items()
                   if f'"objective.nonconvex_reg" = {float(run.key("objective.nonconvex_reg"))}' in extra)
    return problem, S, round(c, 6), run.key("delay.name"), delta


def audit(dirs, res):
    groups = defaultdict(dict)  # (problem, S, c, delay, δ) -> {seed: run}
    for d in dirs:
        for _, run in runs_of(d):
            groups[_group_of(run)][int(run.key("seed"))] = run
    if not groups:
        raise SystemExit("audit_informative: no runs found in " + ", ".join(dirs))
    rows, per_run_inf, per_run_vac, per_run_viol, hyp_ok, hyp_n = [], 0, 0, 0, 0, 0
    curves = []
    for key in sorted(groups):
        problem, S, c, dname, delta = key
        runs = groups[key]
        pilot = runs.get(PILOT_SEED)
        seeds = sorted(s for s in runs if s != PILOT_SEED)
        if pilot is None or len(seeds) < 2:
            continue
        G0 = float(pilot.metrics["G"][-1])
        ms = [runs[s].metrics for s in seeds]
        k = ms[0]["k"]
        sel = k > 0
        meas = np.array([m["grad_norm_sq_mean"][sel] for m in ms])
        # the bound with G fixed in advance: the G-terms scale with (G0 / G_K)²; the optimisation term does not
        fixed = np.array([m["bound_opt"][sel] + (m["bound_stoch"][sel] + m["bound_stale"][sel]) * (G0 / m["G"][sel]) ** 2
                          for m in ms])
        if not np.allclose(fixed, fixed[0], rtol=1e-9):
            raise SystemExit(f"audit_informative: {key}: the fixed-G bound differs between seeds (Δ₀, L or δ differ)")
        bound0 = fixed[0]
        informative = check_labels(meas.mean(0), bound0, np.full(bound0.shape, G0), S)
        hyp = [float(m["G"][-1]) <= G0 for m in ms]
        hyp_ok += sum(hyp)
        hyp_n += len(hyp)
        for m in ms:
            lab = check_labels(m["grad_norm_sq_mean"][sel], m["bound"][sel], m["G"][sel], S)
            per_run_inf += int(lab.sum())
            per_run_vac += int((~lab).sum())
            per_run_viol += int(np.sum(m["grad_norm_sq_mean"][sel] > m["bound"][sel]))
        n_inf = int(informative.sum())
        if n_inf:
            lv = level_verdict(meas[:, informative], bound0[informative])
            verdict = {"met": "holds", "NOT met": "**violated**", "undecided": "undecided"}[lv.verdict]
            # lv.upper bounds mean(measured − bound) from above: + bound is the mean's upper bound
            upper_ratio = float(np.max((lv.upper + bound0[informative]) / bound0[informative]))
        else:
            verdict, upper_ratio = "not informative", math.nan
        rows.append(dict(problem=problem, S=S, c=c, delay=dname, delta=delta, factor=gterm_factor(c, delta, S), G0=G0,
                         seeds=len(seeds), informative=n_inf, points=int(sel.sum()), verdict=verdict,
                         ratio=upper_ratio, final_ratio=float(meas[:, -1].mean() / bound0[-1]),
                         hyp=sum(hyp), first_inf=int(k[sel][informative][0]) if n_inf else -1))
        curves.append((key, k[sel], meas.mean(0), bound0))
    lines = ["# The §3 bound where it can fail (THEORY.md rows 1 and 2; issue 53)", "",
             "Made by `python3 scripts/audits.py informative-plan`, `build/stale sweep "
             "experiments/audit_informative_sweep_convex.toml --jobs 2 --out "
             "sweeps/audit_informative_convex_sweep` (the same for `_nonconvex`) and `python3 scripts/audits.py "
             "informative`; why and how: scripts/audit_informative.py. Every configuration has c + c²δ²/S < 1 (c = γL), so "
             "the bound lies below the measured mean's ceiling S·G² and a check can fail. G is fixed in advance per "
             f"configuration (the final running G of a pilot run, seed 1000); K = {K} block updates, logged every {EVERY}; "
             "the verdict compares the mean of the "
             f"measured (1/K)Σ‖∇f(w_k)‖² over {len(SEEDS)} seeds with the bound at that G through a one-sided 95 % upper "
             "confidence bound, simultaneous over the informative K (a logged K where bound < S·G² or the mean reaches "
             f"{REACH:g}·S·G²).", "",
             "| problem | S | δ | c = γL | c + c²δ²/S | G (pilot) | seeds | informative K (of logged) | first informative K |"
             " pilot's G ≥ the run's own G_K | upper 95 % bound of the mean ÷ bound (largest) | mean ÷ bound at K | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['problem']} | {r['S']} | {r['delta']} ({r['delay']}) | {number(r['c'], 3)} | "
                     f"{number(r['factor'], 3)} | {number(r['G0'], 4)} | {r['seeds']} | {r['informative']} of {r['points']} | "
                     f"{r['first_inf']} | {r['hyp']} of {r['seeds']} | {number(r['ratio'], 3)} | {number(r['final_ratio'], 3)} | "
                     f"{r['verdict']} |")
    total_inf = sum(r["informative"] for r in rows)
    held = sum(r["verdict"] == "holds" for r in rows)
    per_problem = "; ".join(f"{prob}: {sum(r['informative'] for r in rows if r['problem'] == prob)}" for prob in PROBLEMS)
    lines += ["", f"Expectation checks: {total_inf} informative (configuration, K) checks in {len(rows)} configurations "
              f"(per problem: {per_problem}); "
              f"the bound holds in {held} of {len(rows)} (violated: {sum(r['verdict'] == '**violated**' for r in rows)}, "
              f"undecided: {sum(r['verdict'] == 'undecided' for r in rows)}, not informative: "
              f"{sum(r['verdict'] == 'not informative' for r in rows)}).",
              f"Per-run checks with the running G (the harness's own /metrics/bound): {per_run_inf} informative, "
              f"{per_run_vac} vacuous, {per_run_viol} violations.",
              f"The theorem's hypothesis (the pilot's G bounds the run's own sampled block gradients, G_K ≤ G): "
              f"{hyp_ok} of {hyp_n} runs."]
    write(res, "audit_informative.md", "\n".join(lines))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharey=False)
    for ax, prob in zip(axes, PROBLEMS):
        for (key, k, mean, bound0) in curves:
            if key[0] != prob:
                continue
            ax.loglog(k, mean / bound0, label=f"S = {key[1]}, c = {number(key[2], 2)}, {key[3]}")
        ax.axhline(1, color="k", lw=0.8)
        ax.set_title(prob, fontsize=9)
        ax.set_xlabel("K (block updates)")
        ax.set_ylabel("mean over seeds of measured ÷ bound (G fixed)")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    caption(fig, "Each curve: one configuration with c + c²δ²/S < 1; below 1 the bound holds at that K.")
    save(fig, res, "audit_informative.png")
    return rows
