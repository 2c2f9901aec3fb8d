"""Issue 29's audits (docs/theory.md §3, §4, §6, §9), the subcommands of scripts/audits.py that
need more than one sweep shape: the nonconvex bound audit, the tuned rate, and the δ, S and
LocalSGD laws inside the regime where their asymptotic forms apply. Each writes a Markdown
table and a figure to RESULTS/ and prints the table. The sweep files they read are in
experiments/ (audit_nonconvex_sweep.toml and audit_tuned_rate_sweep.toml are written by the
`*-plan` subcommands from the objectives' constants and a pilot run).
"""
from __future__ import annotations

import math
import os
import tempfile
from collections import defaultdict

import numpy as np

from stale_analysis import AnalysisError, fit_exponent_seeds_points, is_diverged, load_run, read_index, runner
from stale_analysis import provenance  # noqa: E402  (each result names the script that wrote it)
from stale_analysis.bound import REACH, bound_verdict, check_labels
from stale_analysis.formatting import number
from stale_analysis.law_verdicts import P_GRID, exponent_verdict, fit_exponent_raw, level_verdict
from stale_analysis.plotting import caption, plt, pow2_tex

STALE = os.environ.get("STALE_BIN", "build/stale")
STYLES = [dict(marker="o", ls="-", ms=6), dict(marker="s", ls="--", ms=5), dict(marker="^", ls=":", ms=5),
          dict(marker="v", ls="-.", ms=6), dict(marker="D", ls="-", ms=4)]


def pd_delta(S: int) -> int:
    """PipeDream's whole-run largest delay for even S, warm-up included: 5S²/4 − S
    (results/pipedream_delays.md; the δ a PipeDream run's bound uses)."""
    return 5 * S * S // 4 - S


def runs_of(d):
    for r in read_index(d):
        if r["status"] in ("ok", "diverged"):
            yield r, load_run(os.path.join(d, r["path"]))


def save(fig, res, name):
    os.makedirs(res, exist_ok=True)
    fig.savefig(os.path.join(res, name), dpi=130)
    provenance.written(os.path.join(res, name))
    plt.close(fig)


def write(res, name, text):
    os.makedirs(res, exist_ok=True)
    with open(os.path.join(res, name), "w") as f:
        f.write(text + "\n")
    provenance.written(os.path.join(res, name))
    print(text)


def theory_of(config, overrides):
    """/theory of a one-update run of CONFIG with OVERRIDES (L, f_low, Δ₀ ...), in a temp file."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "probe.h5")
        runner.run(STALE, config, *overrides, "method.updates=1", "log.progress=false", out=out)
        return load_run(out).theory


def fmt(v):
    return number(float(v), 3, missing="n/a")


def fit_text(x, Y, pred):
    """The descriptive exponent of a·x^p on the raw scale with its seed-only bootstrap interval, and
    the verdict on the prediction (an upper bound on the exponent): met, NOT met or undecided
    (stale_analysis.law_verdicts; its power: results/THEORY_POWER.md)."""
    fit = fit_exponent_raw(x, Y)
    return fit.estimate, fit.lo, fit.hi, exponent_verdict(fit, pred)


# ----------------------------------------------------------------------------------------------
# 1. the nonconvex bound audit
NC_DATA = ["w7a.libsvm", "phishing.libsvm"]
NC_LAMBDA = [0.01, 0.1, 1.0]
NC_C = [0.25, 0.5, 1.0]
NC_S = [4, 8, 16]
NC_VARIANTS = [("rpd", "uniform"), ("rpd", "constant"), ("rpd", "schedule"), ("pipedream", "")]


def plan_nonconvex(out_toml):
    base = "experiments/audit_nonconvex_base.toml"
    zipped = defaultdict(list)
    Ls = {}
    for data in NC_DATA:
        for lam in NC_LAMBDA:
            th = theory_of(base, [f"objective.data={data}", f"objective.nonconvex_reg={lam}"])
            Ls[(data, lam)] = float(th["L"])
            for c in NC_C:
                for S in NC_S:
                    for meth, dname in NC_VARIANTS:
                        zipped['"objective.data"'].append(f'"{data}"')
                        zipped['"objective.storage"'].append('"sparse"' if data.startswith("w7a") else '"dense"')
                        zipped['"objective.nonconvex_reg"'].append(repr(lam))
                        zipped['"method.lr"'].append(repr(c / Ls[(data, lam)]))
                        zipped['"objective.stages"'].append(str(S))
                        zipped['"method.name"'].append(f'"{meth}"')
                        zipped['"delay.name"'].append(f'"{dname or "zero"}"')
                        zipped['"delay.max"'].append(str(pd_delta(S)))
    lines = ["# Nonconvex bound audit (issue 29, part 1), written by `python3 scripts/audits.py nonconvex-plan`:",
             "# logistic + λ Σ w²/(1 + w²) on w7a and phishing, λ ∈ {0.01, 0.1, 1}, S ∈ {4, 8, 16},",
             "# γ = c/L with c ∈ {1/4, 1/2, 1} and L read from the objective (/theory/L):",
             *[f"#   {d}, λ = {lam}: L = {L:.6g}" for (d, lam), L in Ls.items()],
             "# RPD with uniform and constant delays at δ = PipeDream's whole-run δ 5S²/4 − S, RPD replaying",
"# PipeDream's exact delay table (delay.name = schedule), and PipeDream itself; 3 seeds; K from the",
             "# base (1000 block updates: the CPU budget). w7a is stored sparse (its exact mean is then one O(nnz)",
             "# pass an update), phishing dense (so that its γ grid runs as a lockstep ensemble).",
             'base = "audit_nonconvex_base.toml"', 'unread = "drop"', "", "[grid]", "seed = [0, 1, 2]", "", "[zip]"]
    lines += [f"{k} = [{', '.join(v)}]" for k, v in zipped.items()]
    with open(out_toml, "w") as f:
        f.write("\n".join(lines) + "\n")
    provenance.written(out_toml)
    n = len(next(iter(zipped.values())))
    print(f"wrote {out_toml}: {n} zip points × 3 seeds")


def variant_name(run):
    if run.key("method.name") == "pipedream":
        return "PipeDream"
    d = run.key("delay.name")
    return {"uniform": "RPD uniform δ_PD", "constant": "RPD constant δ_PD", "schedule": "RPD + PD's table"}.get(d, d)


def audit_nonconvex(d, res):
    rows = []
    for r, run in runs_of(d):
        th, m = run.theory, run.metrics
        k = m["k"]
        ok = np.isfinite(m["bound"]) & (k > 0)
        meas, bnd = m["grad_norm_sq_mean"][ok], m["bound"][ok]
        ratio = meas / bnd
        rows.append(dict(
            data=run.key("objective.data").replace(".libsvm", ""), lam=float(run.key("objective.nonconvex_reg")),
            S=int(run.key("objective.stages")), var=variant_name(run), seed=int(run.key("seed")),
            c=round(float(th["lr"]) * float(th["L"]), 3), within=int(th.get("lr_within_1_over_L", 0)),
            lower=int(th.get("f_star_is_lower_bound", 0)), delta=float(th["delta"]), G=float(th["G"]),
            diverged=is_diverged(run), status=run.status, checks=int(ok.sum()), viol=int((ratio > 1).sum()),
            info=int(check_labels(meas, bnd, np.asarray(m["G"])[ok], th["S"]).sum()),
            max_ratio=float(np.max(ratio)) if len(ratio) else math.nan, final_ratio=float(ratio[-1]),
            meas=float(meas[-1]), bound=float(bnd[-1]), opt=float(m["bound_opt"][ok][-1]) / float(bnd[-1]),
            stoch=float(m["bound_stoch"][ok][-1]) / float(bnd[-1]), stale=float(m["bound_stale"][ok][-1]) / float(bnd[-1]),
            K=int(k[-1]), up=bool(m["subopt"][-1] > m["subopt"][0])))
    if not rows:
        raise AnalysisError(f"{d}: no runs")
    n = len(rows)
    within = sum(r["within"] for r in rows)
    div = [r for r in rows if r["diverged"]]
    viol_runs = [r for r in rows if r["viol"] > 0]
    checks = sum(r["checks"] for r in rows)
    Ks = sorted({r["K"] for r in rows})
    lines = ["# Nonconvex bound audit (docs/theory.md §3; issue 29, part 1)", "",
             "Made by `python3 scripts/audits.py nonconvex` from the sweep `experiments/audit_nonconvex_sweep.toml` "
             "(itself written by `python3 scripts/audits.py nonconvex-plan`). Objective: L2-regularised logistic regression "
             "(λ₂ = 1e-4) on w7a and phishing plus the nonconvex λ Σ wᵢ²/(1 + wᵢ²); the bound uses L = L_logistic + 2λ, "
             "f_* replaced by its certified lower bound 0 (`f_star_is_lower_bound`), δ = the largest delay any read of "
             "the run had (warm-up included), and the running G; the left side is the exact (1/K)Σ‖∇f(w_k)‖² "
             f"(`log.exact_mean = true`). Reduced scale for the CPU budget: K = {', '.join(map(str, Ks))} block updates "
             "(batch 10), 3 seeds.", "",
             f"- Runs: {n}; with γ ≤ 1/L: {within}; f_* a lower bound: {sum(r['lower'] for r in rows)}; diverged: {len(div)}.",
             f"- Checks (measured against bound at every logged K > 0): {checks}; **violations: "
             f"{sum(r['viol'] for r in rows)} (in {len(viol_runs)} runs)**.",
             f"- Checks that could have failed (informative: bound below S·G_K², the ceiling the running G sets for the "
             f"measured mean, or the measured mean at {REACH:g}·S·G_K² or more; stale_analysis/bound.py): "
             f"{sum(r['info'] for r in rows)} of {checks}; runs with at least one: {sum(r['info'] > 0 for r in rows)} of {n}. "
             f"**Verdict: {bound_verdict(sum(r['info'] for r in rows), checks - sum(r['info'] for r in rows), sum(r['viol'] for r in rows))}**.",
             f"- Largest measured/bound ratio at any logged K: {max(r['max_ratio'] for r in rows):.3g}; at the final K: "
             f"median {np.median([r['final_ratio'] for r in rows]):.3g}, largest {max(r['final_ratio'] for r in rows):.3g}.",
             f"- Runs that end with f(w_K) above f(w_0) = ln 2 (no progress: the step γ = c/L is too large for these delays, "
             f"though below the 10⁶ × divergence rule): {sum(r['up'] for r in rows)} of {n} — the bound covers them "
             "because its running G grows with the iterates. By variant: " + ", ".join(
                 f"{v}: {sum(r['up'] for r in rows if r['var'] == v)}" for v in sorted({r['var'] for r in rows})) + ".",
             f"- δ measured (the bound's δ) per S: " + ", ".join(
                 f"S = {S}: " + "/".join(sorted({str(int(r['delta'])) for r in rows if r['S'] == S and r['var'] != 'RPD uniform δ_PD'}))
                 + f" (uniform draws: max {int(max(r['delta'] for r in rows if r['S'] == S and r['var'] == 'RPD uniform δ_PD'))})"
                 for S in sorted({r['S'] for r in rows})) + ".", ""]
    if viol_runs:
        lines += ["| data | λ | S | variant | c | seed | violations | max ratio |", "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r['data']} | {r['lam']} | {r['S']} | {r['var']} | {r['c']} | {r['seed']} | {r['viol']} | {r['max_ratio']:.3g} |"
                  for r in viol_runs]
        lines.append("")
    lines += ["## Tightness per (data, λ, variant): measured/bound and each term's share of the bound at the final K",
              "", "Median over S, c and seeds [min, max]; shares are the term ÷ the whole bound (they add to 1).", "",
              "| data | λ | variant | runs | violations | measured/bound median [min, max] | optimization 2SΔ₀/(γK) | stochastic γSLG² | stale γ²L²δ²G² | verdict |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    groups = defaultdict(list)
    for r in rows:
        groups[(r["data"], r["lam"], r["var"])].append(r)
    for (data, lam, var), g in sorted(groups.items()):
        q = lambda key: np.array([x[key] for x in g])  # noqa: E731
        lines.append(f"| {data} | {lam} | {var} | {len(g)} | {sum(x['viol'] for x in g)} | {np.median(q('final_ratio')):.3g} "
                     f"[{q('final_ratio').min():.2g}, {q('final_ratio').max():.2g}] | {np.median(q('opt')):.2f} | "
                     f"{np.median(q('stoch')):.2f} | {np.median(q('stale')):.2f} | "
                     f"{bound_verdict(int(q('info').sum()), int(q('checks').sum() - q('info').sum()), int(q('viol').sum()))} |")
    lines += ["", "## By S and c (all data, λ and variants pooled)", "",
              "The last two columns hold the measured mean against the bound *without* its stale term (2SΔ₀/(γK) + γSLG²): "
              "above 1 means the stale term was needed to cover the run.", "",
              "| S | c = γL | runs | measured/bound median | largest | stale term's share, median [min, max] | measured / (bound − stale term), median [max] | runs above 1 | runs ending with f(w_K) > f(w_0) | informative checks of all |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    by = defaultdict(list)
    for r in rows:
        by[(r["S"], r["c"])].append(r)
    for (S, c), g in sorted(by.items()):
        fr = np.array([x["final_ratio"] for x in g])
        st = np.array([x["stale"] for x in g])
        rest = np.array([x["final_ratio"] / (x["opt"] + x["stoch"]) for x in g])
        lines.append(f"| {S} | {c} | {len(g)} | {np.median(fr):.3g} | {fr.max():.3g} | {np.median(st):.2f} [{st.min():.2f}, {st.max():.2f}] | "
                     f"{np.median(rest):.3g} [{rest.max():.3g}] | {int((rest > 1).sum())} | {sum(x['up'] for x in g)} | "
                     f"{sum(x['info'] for x in g)} of {sum(x['checks'] for x in g)} |")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    ax = axes[0]
    cols = {"RPD uniform δ_PD": "C0", "RPD constant δ_PD": "C1", "RPD + PD's table": "C2", "PipeDream": "C3"}
    mk = {"w7a": "o", "phishing": "s"}
    for var, col in cols.items():
        for data, m in mk.items():
            g = [r for r in rows if r["var"] == var and r["data"] == data]
            if g:
                ax.scatter([r["bound"] for r in g], [r["meas"] for r in g], s=10, c=col, marker=m, alpha=0.7,
                           label=f"{var}, {data}")
    lo = min(min(r["meas"] for r in rows), min(r["bound"] for r in rows)) / 2
    hi = max(max(r["meas"] for r in rows), max(r["bound"] for r in rows)) * 2
    ax.plot([lo, hi], [lo, hi], "k--", lw=1)
    ax.set(xscale="log", yscale="log", xlabel="bound of §3 at the final K", ylabel=r"measured $\frac{1}{K}\sum\|\nabla f(w_k)\|^2$",
           title="Nonconvex logistic: measured against the bound")
    ax.legend(fontsize=6, ncol=2)
    ax = axes[1]
    for i, S in enumerate(NC_S):
        for j, term in enumerate(("opt", "stoch", "stale")):
            cs = sorted({r["c"] for r in rows})
            y = [np.median([r[term] for r in rows if r["S"] == S and r["c"] == c]) for c in cs]
            ax.plot(cs, y, color=f"C{j}", **STYLES[i], label=f"{term}, S = {S}")
    ax.set(xscale="log", xlabel=r"$c = \gamma L$", ylabel="share of the bound (median)", title="Which term the bound is made of")
    ax.legend(fontsize=6, ncol=3)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    caption(fig, f"{n} runs, {sum(r['viol'] for r in rows)} violations in {checks} checks ({sum(r['info'] for r in rows)} "
                 f"informative); K = {', '.join(map(str, Ks))}.")
    save(fig, res, "audit_nonconvex.png")
    lines += ["", f"Sweep: {d}. Figure: audit_nonconvex.png."]
    write(res, "audit_nonconvex.md", "\n".join(lines))


# ----------------------------------------------------------------------------------------------
# 1b. the bound on the char-level GPT, with L estimated along the run
def audit_charlm(d, res):
    """The §3 bound on the char-GPT with L̂, the estimate along the run (/theory/L_source): checked at
    every logged K where γ ≤ 1/L̂, the mean is exact and the run did not diverge; the bound with the
    secant estimate alone is recomputed at the final K from the terms (stochastic ∝ L, stale ∝ L²)."""
    rows = []
    for r, run in runs_of(d):
        th, m = run.theory, run.metrics
        k = np.asarray(m["k"])
        ok = np.isfinite(m["bound"]) & (k > 0)
        meas, bnd = np.asarray(m["grad_norm_sq_mean"])[ok], np.asarray(m["bound"])[ok]
        ratio = meas / bnd
        L, Ls, Lp = float(th["L"]), float(th["L_estimate_secant"]), float(th["L_estimate_power"])
        opt, stoch, stale = (float(np.asarray(m[t])[ok][-1]) for t in ("bound_opt", "bound_stoch", "bound_stale"))
        q = Ls / L  # the secant bound: the stochastic term scales with L, the stale term with L²
        bound_sec = opt + stoch * q + stale * q * q
        # the running L̂ of each row, from its stochastic term γSL̂G² (the series the figure draws)
        G = np.asarray(m["G"])[ok]
        L_run = np.asarray(m["bound_stoch"])[ok] / (float(th["lr"]) * float(th["S"]) * G * G)
        rows.append(dict(
            var="PipeDream" if run.key("method.name") == "pipedream" else f"RPD uniform δ = {int(run.key('delay.max'))}",
            lr=float(th["lr"]), seed=int(run.key("seed")), source=str(th.get("L_source", "")),
            estimated=int(th.get("bound_uses_estimated_L", 0)), L=L, Ls=Ls, Lp=Lp, pairs=int(th["L_estimate_pairs"]),
            hvps=int(th["L_estimate_hvps"]), within=int(th.get("lr_within_1_over_L", 0)),
            exact=int(th.get("exact_mean", 0)), delta=float(th["delta"]), G=float(th["G"]), diverged=is_diverged(run),
            checks=int(ok.sum()), viol=int((ratio > 1).sum()), max_ratio=float(np.max(ratio)) if len(ratio) else math.nan,
            info=int(check_labels(meas, bnd, np.asarray(m["G"])[ok], th["S"]).sum()),
            final_ratio=float(ratio[-1]), meas=float(meas[-1]), bound=float(bnd[-1]), opt=opt, stoch=stoch, stale=stale,
            bound_sec=bound_sec, viol_sec=int(meas[-1] > bound_sec), K=int(k[-1]), loss0=float(m["loss"][0]),
            lossK=float(m["loss"][-1]), k_run=k[ok], L_run=L_run))
    if not rows:
        raise AnalysisError(f"{d}: no runs")
    n = len(rows)
    checked = [r for r in rows if r["within"] and r["exact"] and not r["diverged"]]
    Ks = sorted({r["K"] for r in rows})
    checks = sum(r["checks"] for r in checked)
    lines = ["# Char-GPT bound audit with an estimated L (docs/theory.md §3; issue 29)", "",
             "Made by `python3 scripts/audits.py charlm` from the sweep `experiments/audit_charlm_sweep.toml` "
             "(`build/stale sweep experiments/audit_charlm_sweep.toml --jobs 2 --out sweeps/audit_charlm_sweep`). "
             "Objective: the character-level GPT on Tiny Shakespeare at a CPU-minutes size (E = 16, 2 heads, T = 16, "
             "S = 4, 8928 parameters, M = 8 batches of 8 windows; f is the mean over all 8, so ‖∇f‖² is the exact "
             "gradient of the objective of §3). **The bound uses an estimated L** (`/theory/L_source` = "
             f"\"{rows[0]['source']}\"): L̂ = the larger of the secant over consecutive logged iterates and power "
             "iteration on central-difference Hessian-vector products (2 warm-started steps per logged row, every 10 "
             "updates), each row with the estimate over the rows up to it. L̂ is a **lower** estimate of the true L "
             "(the largest curvature the run's own path showed), so this bound is an estimate, not a certified bound: "
             "a violation could be the estimate's fault. f_* is unknown: Δ₀ = f(w₀) − f_low with f_low = 0 "
             "(cross-entropy ≥ 0), an upper bound on f(w₀) − f_*. δ = the largest delay any read had, G the running "
             f"maximum block-gradient norm; exact (1/K)Σ‖∇f(w_k)‖² (`log.exact_mean = true`). K = "
             f"{', '.join(map(str, Ks))} block updates, 3 seeds.", "",
             f"- Runs: {n}; bound with estimated L: {sum(r['estimated'] for r in rows)}; γ ≤ 1/L̂: "
             f"{sum(r['within'] for r in rows)}; exact mean: {sum(r['exact'] for r in rows)}; diverged: "
             f"{sum(r['diverged'] for r in rows)}; checked: {len(checked)}.",
             f"- Checks (measured against the bound with L̂ at every logged K > 0): {checks}; **violations: "
             f"{sum(r['viol'] for r in checked)} (in {sum(r['viol'] > 0 for r in checked)} runs)**.",
             f"- Checks that could have failed (informative: bound below S·G_K² or measured ≥ {REACH:g}·S·G_K²; "
             f"stale_analysis/bound.py): {sum(r['info'] for r in checked)} of {checks}. **Verdict: "
             f"{bound_verdict(sum(r['info'] for r in checked), checks - sum(r['info'] for r in checked), sum(r['viol'] for r in checked))}**.",
             f"- Largest measured/bound at any logged K: {max(r['max_ratio'] for r in checked):.3g}; at the final K: median "
             f"{np.median([r['final_ratio'] for r in checked]):.3g}, largest {max(r['final_ratio'] for r in checked):.3g}.",
             f"- With the secant estimate alone (the default `log.L_power_steps = 0`), recomputed at the final K: "
             f"{sum(r['viol_sec'] for r in checked)} violations in {len(checked)} runs; largest measured/bound "
             f"{max(r['meas'] / r['bound_sec'] for r in checked):.3g}. The secant is "
             f"{np.median([r['Ls'] / r['Lp'] for r in rows]):.2f} (median; range {min(r['Ls'] / r['Lp'] for r in rows):.2f}–"
             f"{max(r['Ls'] / r['Lp'] for r in rows):.2f}) of the power-iteration estimate at the same iterates.",
             f"- δ: {', '.join(sorted({str(int(r['delta'])) for r in rows}))}. The loss goes from "
             f"{np.median([r['loss0'] for r in rows]):.3f} (ln 65 = 4.174) to {min(r['lossK'] for r in rows):.3f}–"
             f"{max(r['lossK'] for r in rows):.3f}.", ""]
    viol_runs = [r for r in checked if r["viol"] > 0]
    if viol_runs:
        lines += ["| variant | γ | seed | violations | largest measured/bound |", "|---|---|---|---|---|"]
        lines += [f"| {r['var']} | {pow2_text(r['lr'])} | {r['seed']} | {r['viol']} | {r['max_ratio']:.3g} |" for r in viol_runs]
        lines.append("")
    lines += ["## Per (variant, γ): L̂, violations, and the tightness of the bound and of each term at the final K", "",
              "Median over seeds [min, max]. L̂ is the estimate the bound used (power iteration ≥ secant in every run); "
              "the shares are each term ÷ the whole bound (they add to 1); measured ÷ term says how far each term alone "
              "lies above the measured mean (≤ 1: that term alone would cover the run).", "",
              "| variant | γ | runs | γ ≤ 1/L̂ | L̂ (estimated) | secant L̂ | γL̂ | violations (every K) | secant-L bound violated (final K) | "
              "measured/bound | share opt 2SΔ₀/(γK) | share stoch γSL̂G² | share stale γ²L̂²δ²G² | measured ÷ opt | "
              "measured ÷ stoch | measured ÷ stale | verdict (checked runs) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    groups = defaultdict(list)
    for r in rows:
        groups[(r["var"], r["lr"])].append(r)

    def group_checks(g):
        info = sum(x["info"] for x in g)
        return info, sum(x["checks"] for x in g) - info, sum(x["viol"] for x in g)

    def med(g, f, fmt_=".3g"):
        v = np.array([f(x) for x in g])
        return f"{np.median(v):{fmt_}} [{v.min():{fmt_}}, {v.max():{fmt_}}]"

    for (var, lr), g in sorted(groups.items()):
        lines.append(
            f"| {var} | {pow2_text(lr)} | {len(g)} | {sum(x['within'] for x in g)} | {med(g, lambda x: x['L'])} | "
            f"{med(g, lambda x: x['Ls'])} | {med(g, lambda x: lr * x['L'], '.2f')} | {sum(x['viol'] for x in g)} | "
            f"{sum(x['viol_sec'] for x in g)} | {med(g, lambda x: x['final_ratio'])} | "
            f"{np.median([x['opt'] / x['bound'] for x in g]):.2f} | {np.median([x['stoch'] / x['bound'] for x in g]):.2f} | "
            f"{np.median([x['stale'] / x['bound'] for x in g]):.2f} | {med(g, lambda x: x['meas'] / x['opt'])} | "
            f"{med(g, lambda x: x['meas'] / x['stoch'])} | {med(g, lambda x: x['meas'] / x['stale'])} | "
            f"{bound_verdict(*group_checks([x for x in g if x['within'] and x['exact'] and not x['diverged']]))} |")
    lines += ["", f"Estimator work per run: {rows[0]['pairs']} secant pairs and {rows[0]['hvps']} Hessian-vector products "
              "(2 full gradients each) against K full gradients for the exact mean."]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    ax = axes[0]
    lrs = sorted({r["lr"] for r in rows})
    mk = {v: m for v, m in zip(sorted({r["var"] for r in rows}), ("o", "s", "^", "D"))}
    for i, lr in enumerate(lrs):
        for var, m in mk.items():
            g = [r for r in checked if r["lr"] == lr and r["var"] == var]
            if g:
                ax.scatter([r["bound"] for r in g], [r["meas"] for r in g], s=22, c=f"C{i}", marker=m,
                           label=f"{var}, γ = {pow2_text(lr)}")
                ax.scatter([r["bound_sec"] for r in g], [r["meas"] for r in g], s=22, marker=m, facecolors="none",
                           edgecolors=f"C{i}")
    vals = [r[x] for r in checked for x in ("meas", "bound", "bound_sec")]
    lo, hi = min(vals) / 2, max(vals) * 2
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="measured = bound")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi),
           xlabel="bound of §3 at the final K, estimated L (open: secant estimate alone)",
           ylabel=r"measured $\frac{1}{K}\sum\|\nabla f(w_k)\|^2$", title="Char-GPT: measured against the bound (estimated L)")
    ax.legend(fontsize=6)
    ax = axes[1]
    for i, lr in enumerate(lrs):
        for j, r in enumerate(r for r in rows if r["lr"] == lr):
            ax.plot(r["k_run"], r["L_run"], color=f"C{i}", lw=0.8, alpha=0.7, label=f"γ = {pow2_text(lr)}" if j == 0 else None)
        ax.axhline(1 / lr, color=f"C{i}", ls=":", lw=1)
    ax.set(yscale="log", xlabel="block updates k", ylabel=r"running $\hat L$ (estimated; dotted: $1/\gamma$)",
           title="The estimate along each run")
    ax.legend(fontsize=7)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    caption(fig, f"{n} runs, {sum(r['viol'] for r in checked)} violations in {checks} checks with the estimated L; "
                 "L̂ is a lower estimate of L, so the bound is an estimate.")
    save(fig, res, "audit_charlm.png")
    lines += ["", f"Sweep: {d}. Figure: audit_charlm.png."]
    write(res, "audit_charlm.md", "\n".join(lines))


def pow2_text(x: float) -> str:
    """'2^-7' for a power of two, else the number"""
    e = math.log2(x)
    return f"2^{int(e)}" if e == int(e) else f"{x:g}"


# ----------------------------------------------------------------------------------------------
# 2. the tuned rate
TR_S = [2, 4, 8, 16, 32]
TR_K = [300, 1000, 3000, 10000, 30000, 100000]
TR_PILOT_K = 10000


def plan_tuned(out_toml):
    base = "experiments/audit_tuned_base.toml"
    th0 = theory_of(base, [])
    L, D0 = float(th0["L"]), float(th0["Delta0"])
    zipped = defaultdict(list)
    notes = []
    with tempfile.TemporaryDirectory() as tmp:
        for S in TR_S:
            out = os.path.join(tmp, f"pilot{S}.h5")
            runner.run(STALE, base, f"objective.stages={S}", f"delay.max={pd_delta(S)}", f"method.lr={1 / L!r}",
                       f"method.updates={TR_PILOT_K}", out=out)
            G = float(load_run(out).theory["G"])
            notes.append(f"#   S = {S}: δ = {pd_delta(S)}, pilot G = {G:.6g}")
            for K in TR_K:
                lr = min(1 / L, math.sqrt(2 * D0 / (L * G * G * K)))
                for key, v in (("objective.stages", S), ("method.updates", K), ("method.lr", repr(lr)),
                               ("delay.max", pd_delta(S)), ("log.every", max(1, K // 100))):
                    zipped[f'"{key}"'].append(str(v))
    lines = ["# Tuned-rate audit (issue 29, part 2), written by `python3 scripts/audits.py tuned-plan`:",
             f"# γ = min{{1/L, √(2Δ₀/(L G² K))}} with L = {L:.6g}, Δ₀ = f(0) − 0 = {D0:.6g} and G the running",
             f"# maximum block-gradient norm of a pilot run per S (RPD, constant δ, γ = 1/L, K = {TR_PILOT_K}, seed 0):",
             *notes,
             "# δ = PipeDream's whole-run largest delay 5S²/4 − S (constant: the worst case at every read),",
             "# against δ = 0 (delay.name = zero) at the same γ, K and seed; 3 seeds.",
             'base = "audit_tuned_base.toml"', 'unread = "drop"', "", "[grid]", '"delay.name" = ["zero", "constant"]',
             "seed = [0, 1, 2]", "", "[zip]"]
    lines += [f"{k} = [{', '.join(v)}]" for k, v in zipped.items()]
    with open(out_toml, "w") as f:
        f.write("\n".join(lines) + "\n")
    provenance.written(out_toml)
    print("\n".join(lines[:10 + len(TR_S)]))


def audit_tuned(d, res):
    data = defaultdict(dict)  # (S, delay) -> {K: {seed: row}}
    for r, run in runs_of(d):
        S, K = int(run.key("objective.stages")), int(run.key("method.updates"))
        dn = run.key("delay.name")
        th, m = run.theory, run.metrics
        data[(S, dn)].setdefault(K, {})[int(run.key("seed"))] = dict(
            meas=float(m["grad_norm_sq_mean"][-1]), bound=float(m["bound"][-1]), opt=float(m["bound_opt"][-1]),
            stoch=float(m["bound_stoch"][-1]), stale=float(m["bound_stale"][-1]), lr=float(th["lr"]), L=float(th["L"]),
            delta=float(th["delta"]), div=is_diverged(run))
    Ss = sorted({S for S, _ in data})
    lines = ["# Tuned-rate audit (docs/theory.md §3 corollary; issue 29, part 2)", "",
             "Made by `python3 scripts/audits.py tuned` from `experiments/audit_tuned_rate_sweep.toml` (written by "
             "`python3 scripts/audits.py tuned-plan`; the pilot G per S and the constants are in its header). RPD with a "
             "constant delay δ = 5S²/4 − S (PipeDream's largest delay, warm-up included) and with δ = 0, at "
             "γ = min{1/L, √(2Δ₀/(LG²K))}, on nonconvex logistic regression (synthetic, d = 64, n = 640, λ = 0.1). "
             "Measured: the exact (1/K)Σ‖∇f(w_k)‖², mean over 3 seeds. Slopes: least squares in log–log, 95% interval "
             "by a bootstrap over seeds and K points.", "",
             "Predicted: the bound is A/√K + B·δ²/K (A from the optimization and stochastic terms, B = 2Δ₀L); the "
             "measured mean should fall like K^(−1/2) where the first part dominates, and staleness should stop "
             "mattering once δ²/K is small against S/√K. Every γ here is the second branch √(2Δ₀/(LG²K)) < 1/L. Where "
             "K ≤ δ the bound's δ is K − 1 (no read can be older), as the table's δ column shows.", "",
             "| S | δ | K | γ | γ = 1/L? | measured, δ | measured, δ = 0 | ratio δ / δ = 0 | bound | stale term's share | measured/bound |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    fits = ["| S | slope over all K (δ) | 95% interval | slope where stale share < 1/2 (δ) | K range | slope (δ = 0) | 95% interval | "
            "measured: staleness stops mattering (|ratio − 1| ≤ 5 % from this K on) | bound: K where its δ²/K term falls to the rest (K*) |",
            "|---|---|---|---|---|---|---|---|---|"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    for i, S in enumerate(Ss):
        st, ze = data[(S, "constant")], data.get((S, "zero"), {})
        Ks = sorted(st)
        seeds = sorted(set.intersection(*[set(st[K]) for K in Ks]))
        Y = np.array([[st[K][s]["meas"] for K in Ks] for s in seeds])
        Y0 = np.array([[ze[K][s]["meas"] for K in Ks] for s in seeds]) if ze else None
        share = np.array([np.mean([st[K][s]["stale"] / st[K][s]["bound"] for s in seeds]) for K in Ks])
        ratio = Y.mean(0) / Y0.mean(0)
        for j, K in enumerate(Ks):
            r0 = st[K][seeds[0]]
            lines.append(f"| {S} | {int(r0['delta'])} | {K} | {r0['lr']:.4g} | {'yes' if abs(r0['lr'] * r0['L'] - 1) < 1e-9 else 'no'} | "
                         f"{Y[:, j].mean():.4g} | {Y0[:, j].mean():.4g} | {ratio[j]:.3f} | "
                         f"{np.mean([st[K][s]['bound'] for s in seeds]):.4g} | {share[j]:.2f} | "
                         f"{Y[:, j].mean() / np.mean([st[K][s]['bound'] for s in seeds]):.3g} |")
        e, lo, hi = fit_exponent_seeds_points(Ks, Y)
        e0, lo0, hi0 = fit_exponent_seeds_points(Ks, Y0)
        dom = [j for j in range(len(Ks)) if share[j] < 0.5]
        if len(dom) >= 3:
            ed, lod, hid = fit_exponent_seeds_points([Ks[j] for j in dom], Y[:, dom])
            dtxt, rng = f"{ed:.3f} [{lod:.3f}, {hid:.3f}]", f"{Ks[dom[0]]}..{Ks[dom[-1]]}"
        else:
            dtxt, rng = f"n/a ({len(dom)} K points with stale share < 1/2)", ""
        stop = next((Ks[j] for j in range(len(Ks)) if np.all(np.abs(ratio[j:] - 1) <= 0.05)), None)
        # the bound's stale/rest ratio falls like K^(-1/2) under the tuned γ (second branch): K* = K·r² from the last K
        last = st[Ks[-1]]
        r_last = np.mean([last[s]["stale"] / (last[s]["opt"] + last[s]["stoch"]) for s in seeds])
        kstar = Ks[-1] * r_last ** 2
        fits.append(f"| {S} | {e:.3f} | [{lo:.3f}, {hi:.3f}] | {dtxt} | {rng} | {e0:.3f} | [{lo0:.3f}, {hi0:.3f}] | "
                    f"{stop if stop else 'not within the K range'} | {kstar:.3g} |")
        sty = STYLES[i % len(STYLES)]
        axes[0].plot(Ks, Y.mean(0), color=f"C{i}", label=f"S = {S}, δ = {pd_delta(S)}", **sty)
        axes[0].plot(Ks, Y0.mean(0), color=f"C{i}", lw=0.8, ls=":", marker=sty["marker"], mfc="white", ms=4)
        axes[1].plot(Ks, share, color=f"C{i}", label=f"S = {S}", **sty)
    Kall = np.array(TR_K, float)
    axes[0].plot(Kall, 0.3 * Kall ** -0.5, "k--", lw=0.8, label=r"$\propto K^{-1/2}$")
    axes[0].set(xscale="log", yscale="log", xlabel="K (block updates)", ylabel=r"measured $\frac{1}{K}\sum\|\nabla f(w_k)\|^2$",
                title="Tuned γ: solid δ = 5S²/4 − S, dotted δ = 0")
    axes[0].legend(fontsize=7)
    axes[1].set(xscale="log", xlabel="K", ylabel=r"bound's stale term $\gamma^2L^2\delta^2G^2$ ÷ bound", title="The δ²/K term's share")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    save(fig, res, "audit_tuned_rate.png")
    lines += ["", *fits, "", f"Sweep: {d}. Figure: audit_tuned_rate.png."]
    write(res, "audit_tuned_rate.md", "\n".join(lines))


# ----------------------------------------------------------------------------------------------
# 3. exponent laws inside their regime
def stale_dist_sq(run, skip):
    """mean of ‖w_k − z_k‖² over the logged k > skip (past the first δ updates, whose reads are
    capped by k)."""
    k, sd = run.metrics["k"], run.metrics["stale_dist"]
    sel = (k > skip) & np.isfinite(sd)
    return float(np.mean(sd[sel] ** 2)) if sel.any() else math.nan


def unstable(run):
    """outside the regime of an asymptotic law: diverged, or ending with f(w_K) above f(w_0) (the
    step is past the stability limit of these delays, results/STABILITY.md; the excess then jumps
    by orders of magnitude instead of following a power)"""
    s = run.metrics["subopt"]
    return bool(is_diverged(run) or not np.isfinite(s[-1]) or s[-1] > s[0])


def law(xs, E, pred, what, P=None, unstable_at=None):
    """One law, a row of the fits table. Its verdict (issue 53) is the LEVEL inequality the bound
    states, E ≤ P (P: the bound's term with each run's own G, [seeds, points]), as E/P ≤ 1 per
    seed, by a one-sided 95 % upper confidence bound on the mean ratio over seeds, simultaneous over
    the points (law_verdicts.level_verdict), on every point, unstable ones included. The exponent is descriptive: a·x^p on the raw scale over
    every point whose seeds all have a finite value (no filter on the sign or the stability of the
    outcome), with a seed-only bootstrap interval, judged against the predicted exponent only where
    it can be (≥ 3 points with a positive mean, an estimate inside the fitted range); beside it the
    same fit over the points where every seed is stable, for context, without a verdict."""
    xs = np.asarray(xs, float)
    fin = np.all(np.isfinite(E), axis=0)
    idx = np.where(fin)[0]
    broken = ", ".join(f"{x:g}" for x in xs[~fin])
    npos = int(np.sum(E.mean(axis=0)[fin] > 0))
    level = "n/a"
    if P is not None and len(idx) >= 1 and E.shape[0] >= 2:
        # per seed as a ratio to its own term: the term carries the run's own G, which past the
        # stability limit varies over seeds by orders of magnitude and would swamp a difference
        lv = level_verdict(E[:, idx] / np.asarray(P, float)[:, idx], np.ones(len(idx)))
        level = {"met": "holds", "NOT met": "**violated**", "undecided": "undecided"}[lv.verdict]
    if len(idx) < 2:
        return (f"| {what} | {npos} of {len(xs)} | {level} | n/a | | | ≤ {pred} | **not observable**: fewer than 2 points "
                "with finite values |"), None
    est, lo, hi, verdict = fit_text(xs[idx], E[:, idx], pred)
    if npos < 3:
        verdict = f"no power law ({npos} point{'s' if npos != 1 else ''} with a positive mean)"
    elif not (P_GRID[0] + 0.1 < est < P_GRID[-1] - 0.1):
        verdict = f"no power law (the fit sits at the edge of its range [{P_GRID[0]:g}, {P_GRID[-1]:g}])"
    stable_txt = ""
    if unstable_at is not None:
        st = [i for i in idx if not unstable_at[i]]
        if len(st) >= 3 and np.sum(E.mean(axis=0)[st] > 0) >= 3:
            s_est, s_lo, s_hi, _ = fit_text(xs[st], E[:, st], pred)
            stable_txt = f"{s_est:.3f} [{s_lo:.3f}, {s_hi:.3f}] ({xs[st[0]]:g}..{xs[st[-1]]:g})"
        else:
            stable_txt = "fewer than 3 stable points with a positive mean"
    rng = f"{xs[idx[0]]:g}..{xs[idx[-1]]:g}" + (f"; law breaks (diverged) at {broken}" if broken else "")
    return (f"| {what} | {npos} of {len(idx)} ({rng}) | {level} | {est:.3f} | [{lo:.3f}, {hi:.3f}] | {stable_txt} | "
            f"≤ {pred} | {verdict} |"), est


def collect(dirs, xkey, variant, extra=lambda run: ()):
    """{(extra..., variant): {x: {seed: (gns_mean, stale_dist², G, lr, delta, diverged)}}}"""
    out = defaultdict(lambda: defaultdict(dict))
    for d in dirs:
        for r, run in runs_of(d):
            th = run.theory
            delta = float(th["delta"])
            out[(*extra(run), variant(run))][float(run.key(xkey))][int(run.key("seed"))] = (
                float(run.metrics["grad_norm_sq_mean"][-1]), stale_dist_sq(run, delta), float(th["G"]), float(th["lr"]),
                delta, unstable(run))
    return out


def excess_laws(data, base_of, xs_label, pred_excess, pred_dist, title, fig_name, res, regime):
    """data: {key: {x: {seed: tuple}}}; base_of(key) -> the zero-delay key"""
    fits = ["| law | points with a positive mean (all fitted) | level: measured ÷ the bound's term ≤ 1 (upper 95 % bound over seeds) | "
            "exponent of a·x^p, raw scale, every point | 95% interval (bootstrap over seeds) | exponent on the stable points "
            "(descriptive) | predicted exponent | exponent verdict |",
            "|---|---|---|---|---|---|---|---|"]
    rows = [f"| series | {xs_label} | δ | excess of (1/K)Σ‖∇f‖² over δ = 0, mean [min, max] | bound's stale term γ²L²δ²G² | "
            "mean ‖w_k − z_k‖² | lemma's γ²δ²G² | seeds unstable (diverged or f(w_K) > f(w_0)) |", "|---|---|---|---|---|---|---|---|"]
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 4.6))
    i = 0
    for key in sorted(data):
        if key[-1] == "zero":
            continue
        by, base = data[key], data[base_of(key)]
        xs = sorted(x for x in by if x in base)
        seeds = sorted(set.intersection(*[set(by[x]) & set(base[x]) for x in xs]))
        # every point is fitted, unstable ones included (issue 53: no outcome filter); the table marks them
        xs_ok = xs
        E = np.array([[by[x][s][0] - base[x][s][0] for x in xs_ok] for s in seeds])
        D = np.array([[by[x][s][1] for x in xs_ok] for s in seeds])
        name = ", ".join(str(k) for k in key)
        for x in xs:
            v = [by[x][s] for s in seeds]
            e = np.array([by[x][s][0] - base[x][s][0] for s in seeds])
            G, lr, dl = np.mean([t[2] for t in v]), v[0][3], v[0][4]
            L = lr_L.get(key, math.nan)
            rows.append(f"| {name} | {x:g} | {dl:g} | {e.mean():+.4g} [{e.min():+.3g}, {e.max():+.3g}] | "
                        f"{lr ** 2 * L ** 2 * dl ** 2 * G ** 2:.4g} | {np.mean([t[1] for t in v]):.4g} | "
                        f"{lr ** 2 * dl ** 2 * G ** 2:.4g} | {sum(t[5] for t in v)} |")
        L = lr_L.get(key, math.nan)
        # the bound's terms with each run's own G: γ²L²δ²G² caps the excess, γ²δ²G² the stale distance
        Pd = np.array([[by[x][s][3] ** 2 * by[x][s][4] ** 2 * by[x][s][2] ** 2 for x in xs_ok] for s in seeds])
        Pe = Pd * L * L
        uns = np.array([any(by[x][s][5] for s in seeds) for x in xs_ok])
        row, est = law(xs_ok, E, pred_excess, f"{name}: excess of (1/K)Σ‖∇f‖²", Pe if math.isfinite(L) else None, uns)
        fits.append(row)
        row, est_d = law(xs_ok, D, pred_dist, f"{name}: mean ‖w_k − z_k‖²", Pd, uns)
        fits.append(row)
        sty = STYLES[i % len(STYLES)]
        m = E.mean(0)
        line, = axes[0].plot(xs_ok, np.abs(m), color=f"C{i}", label=name, **sty)
        neg = m <= 0
        axes[0].plot(np.array(xs_ok)[neg], np.abs(m)[neg], sty["marker"], mfc="white", color=line.get_color(), ls="none")
        axes[1].plot(xs_ok, D.mean(0), color=f"C{i}", label=name + (f" (slope {est_d:.2f})" if est_d is not None else ""), **sty)
        i += 1
    for ax, yl in zip(axes, (r"|excess of $\frac{1}{K}\sum\|\nabla f\|^2$ over δ = 0| (open: ≤ 0)", r"mean $\|w_k - z_k\|^2$")):
        ax.set(xscale="log", yscale="log", xlabel=xs_label, ylabel=yl)
        ax.legend(fontsize=6)
    axes[0].set_title(title, fontsize=9)
    axes[1].set_title("the proof's stale distance (bound γ²δ²G²)", fontsize=9)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    caption(fig, regime)
    save(fig, res, fig_name)
    return fits, rows


lr_L: dict = {}  # (series key) -> L, filled by the audits for the table's stale term


def audit_delta_regime(d, res):
    data = collect([d], "delay.max", lambda r: r.key("delay.name"), lambda r: (f"γ = 2^{round(math.log2(float(r.key('method.lr'))))}",))
    # the δ = 0 runs carry delay.max of their zip point (dropped from the config): re-key them by K
    zero = defaultdict(lambda: defaultdict(dict))
    for r, run in runs_of(d):
        if run.key("delay.name") == "zero":
            K = int(run.key("method.updates"))
            th = run.theory
            zero[(f"γ = 2^{round(math.log2(float(run.key('method.lr'))))}", "zero")][K / 50][int(run.key("seed"))] = (
                float(run.metrics["grad_norm_sq_mean"][-1]), 0.0, float(th["G"]), float(th["lr"]), 0.0, unstable(run))
            for v in ("uniform", "constant"):
                lr_L[(f"γ = 2^{round(math.log2(float(run.key('method.lr'))))}", v)] = float(th["L"])
    data = {k: v for k, v in data.items() if k[-1] != "zero"}
    data.update(zero)
    regime = ("Regime: S = 8, K = 50·δ (δ ≪ K at every point), γL ∈ {0.007, 0.028, 0.11}; means over 5 seeds;\n"
              "points where a seed diverged or ended above f(w_0) (unstable) are fitted too and listed in the table.")
    fits, rows = excess_laws(data, lambda k: (k[0], "zero"), "δ", 2, 2, "δ law at K = 50δ (S = 8)", "audit_delta_regime.png",
                             res, regime)
    lines = ["# δ law inside its regime (docs/theory.md §3, §9; issue 29, part 3)", "",
             "Made by `python3 scripts/audits.py delta-regime` from `experiments/audit_delta_regime_sweep.toml`: the E1 "
             "problem (random least squares, d = 512, n = 600, batch 10, S = 8), RPD with uniform and constant delays "
             "δ ∈ {2, …, 512}, **K = 50·δ** so that δ ≪ K at every point (the previous audit, results/audit_delta.md, fixed "
             "K = 6400 and fitted where δ is a sizable fraction of K), against δ = 0 at the same K, γ and seed (common random "
             "numbers), γ ∈ {2⁻⁹, 2⁻⁷, 2⁻⁵}, 5 seeds. A point is inside the regime when every seed's run is stable "
             "(not diverged and f(w_K) ≤ f(w_0)); unstable points are listed and fitted: past the stability limit "
             "(results/STABILITY.md) the excess jumps by orders of magnitude instead of following a power, which the "
             "fitted exponent then shows.", "",
             "Two laws: the excess of (1/K)Σ‖∇f(w_k)‖² over δ = 0, which the bound caps by its stale term γ²L²δ²G² "
             "(exponent ≤ 2 in δ at fixed γ), and the mean stale distance ‖w_k − z_k‖² the proof bounds by γ²δ²G² "
             "(exponent ≤ 2). Every point is fitted, unstable and negative ones included (issue 53: no outcome filter; "
             "the table marks the unstable ones, where the law breaks): a·δ^p on the raw scale, weighted by the seed "
             "variance, with a 95% interval p̂ ± t·SE from a bootstrap over seeds only; the exponent is *met* when the "
             "whole interval lies at or below the prediction, *NOT met* when it lies above (the rule's power at this "
             "noise: results/THEORY_POWER.md).", "", *fits, "", *rows, "",
             f"Sweep: {d}. Figure: audit_delta_regime.png."]
    write(res, "audit_delta_regime.md", "\n".join(lines))


def audit_stages_regime(dirs, res):
    def variant(run):
        n = run.key("delay.name")
        if n == "schedule":
            return "PD table (capped)" if run.key("delay.schedule") == "pipedream-capped" else "PD table"
        return {"uniform": "uniform δ", "constant": "constant δ"}.get(n, n)
    data = collect(dirs, "objective.stages", variant, lambda r: (f"γ = 2^{round(math.log2(float(r.key('method.lr'))))}",))
    for r, run in runs_of(dirs[0]):
        for k in data:
            lr_L[k] = float(run.theory["L"])
        break
    regime = ("Regime: γ ∈ {2^-7, 2^-5} (γL = 0.028, 0.11), δ = 5S²/4 − S and K = 50·δ (δ ≪ K at every point); 3 seeds;\n"
              "points where a seed diverged or ended above f(w_0) (unstable) are fitted too and listed in the table.")
    fits, rows = excess_laws(data, lambda k: (k[0], "zero"), "S", 4, 4, "S law at K = 50·(5S²/4 − S)", "audit_stages_regime.png",
                             res, regime)
    lines = ["# S law inside its regime (docs/theory.md §4, §9; issue 29, part 3)", "",
             "Made by `python3 scripts/audits.py stages-regime` from `experiments/audit_stages_regime_sweep.toml` and "
             "`experiments/audit_stages_capped_sweep.toml`: the E1 problem (d = 512, n = 600, batch 10), "
             "S ∈ {2, 4, 6, 8, 10, 12, 16, 24, 32}, δ = 5S²/4 − S (PipeDream's largest delay, warm-up included), **K = 50·δ** "
             "so that δ ≪ K at every point, γ ∈ {2⁻⁷, 2⁻⁵}, 3 seeds. Series: RPD with uniform and constant delays on δ, RPD "
             "replaying PipeDream's exact delay table (the RPD authors' rule, `pipedream`) and real PipeDream's "
             "(`pipedream-capped`), each against δ = 0 at the same S, K and seed. Unstable points (a seed diverged or "
             "ended with f(w_K) > f(w_0)) are listed and fitted, as in results/audit_delta_regime.md.", "",
             "Predicted: δ = Θ(S²) makes the bound's stale term Θ(γ²S⁴) (exponent ≤ 4); the proof's ‖w_k − z_k‖² ≤ γ²δ²G² "
             "likewise grows at most like S⁴G² (G itself shrinks with S: a block holds d/S coordinates). Verdict rule as in "
             "results/audit_delta_regime.md.", "", *fits, "", *rows, "",
             f"Sweeps: {', '.join(dirs)}. Figure: audit_stages_regime.png."]
    write(res, "audit_stages_regime.md", "\n".join(lines))


def audit_localsgd_sh(d, res):
    by = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))  # lr -> S -> H -> seed -> (gns, subopt, div)
    K = 0
    for r, run in runs_of(d):
        K = int(run.key("method.updates"))
        by[float(run.key("method.lr"))][int(run.key("objective.stages"))][int(run.key("method.local_steps"))][
            int(run.key("seed"))] = (float(run.metrics["grad_norm_sq_mean"][-1]), float(run.metrics["subopt"][-1]), is_diverged(run))
    fits = ["| law | points with a positive mean (all fitted) | level: measured ÷ the bound's term ≤ 1 (upper 95 % bound over seeds) | "
            "exponent of a·x^p, raw scale, every point | 95% interval (bootstrap over seeds) | exponent on the stable points "
            "(descriptive) | predicted exponent | exponent verdict |",
            "|---|---|---|---|---|---|---|---|"]
    rows = ["| γ | S = R | H | (1/K)Σ‖∇f‖² mean [min, max] | excess over H = 1 | final f − f_* mean | seeds diverged |",
            "|---|---|---|---|---|---|---|"]
    fig, axes = plt.subplots(1, 2, figsize=(11.5, 4.6))
    for a, lr in enumerate(sorted(by)):
        exc_by_S = {}
        for i, S in enumerate(sorted(by[lr])):
            Hs = sorted(by[lr][S])
            seeds = sorted(set.intersection(*[set(by[lr][S][H]) for H in Hs]))
            G = np.array([[by[lr][S][H][s][0] for H in Hs] for s in seeds])
            F = np.array([[by[lr][S][H][s][1] for H in Hs] for s in seeds])
            div = [sum(by[lr][S][H][s][2] for s in seeds) for H in Hs]
            E = G - G[:, [0]]
            for j, H in enumerate(Hs):
                rows.append(f"| 2^{round(math.log2(lr))} | {S} | {H} | {G[:, j].mean():.4g} [{G[:, j].min():.3g}, {G[:, j].max():.3g}] | "
                            f"{E[:, j].mean():+.3g} | {F[:, j].mean():.4g} | {div[j]} |")
            ok = list(range(1, len(Hs)))  # every H > 1: diverged seeds are named by law(), not filtered
            row, _ = law([Hs[j] for j in ok], E[:, ok], 2, f"γ = 2^{round(math.log2(lr))}, S = {S}: excess over H = 1 against H")
            fits.append(row)
            exc_by_S[S] = (Hs, E, div)
            axes[a].plot(Hs[1:], np.abs(E[:, 1:].mean(0)), color=f"C{i}", label=f"S = R = {S}", **STYLES[i % len(STYLES)])
            neg = E[:, 1:].mean(0) <= 0
            axes[a].plot(np.array(Hs[1:])[neg], np.abs(E[:, 1:].mean(0))[neg], STYLES[i % len(STYLES)]["marker"], mfc="white", color=f"C{i}", ls="none")
        Ss = sorted(exc_by_S)
        for H in sorted(set.intersection(*[set(exc_by_S[S][0]) for S in Ss])):
            if H == 1:
                continue
            cols = Ss
            E = np.stack([exc_by_S[S][1][:, exc_by_S[S][0].index(H)] for S in cols], axis=1)
            row, _ = law(cols, E, 3, f"γ = 2^{round(math.log2(lr))}, H = {H}: excess over H = 1 against S")
            fits.append(row)
        axes[a].set(xscale="log", yscale="log", xlabel="H", ylabel=r"|excess of $\frac{1}{K}\sum\|\nabla f\|^2$ over H = 1| (open: ≤ 0)",
                    title=f"LocalSGD, γ = 2^{round(math.log2(lr))}, K = {K}")
        axes[a].legend(fontsize=7)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    caption(fig, "Regime: K = 25600 fixed, R = S, the E1 problem; 3 seeds; open markers: excess ≤ 0.")
    save(fig, res, "audit_localsgd_sh.png")
    lines = ["# LocalSGD's rate with S and H varied (docs/theory.md §6, §9; issue 29, part 3)", "",
             "Made by `python3 scripts/audits.py localsgd-sh` from `experiments/audit_localsgd_sh_sweep.toml`: the E1 "
             f"problem (d = 512, n = 600, batch 10), LocalSGD with R = S ∈ {{2, 4, 6, 8, 12, 16}} replicas, H ∈ {{1, …, 32}} local "
             f"steps, K = {K} block updates, γ ∈ {{2⁻⁷, 2⁻⁵}}, 3 seeds. Predicted [RPD]: O(√(S/K) + S³H²/K) for the mean "
             "squared gradient on the averaged model, so at fixed K and S the excess over H = 1 grows at most like H² and at "
             "fixed H at most like S³. Verdict rule as in results/audit_delta_regime.md (every H and S fitted, "
             "seed-only interval against the prediction).", "", *fits, "", *rows, "",
             f"Sweep: {d}. Figure: audit_localsgd_sh.png."]
    write(res, "audit_localsgd_sh.md", "\n".join(lines))
