#!/usr/bin/env python3
"""Stability of stale iterations on a quadratic: predicted γ_max against the measured divergence
boundary (issue #16 part 2; results/STABILITY.md).

For each method and pipeline depth S (PipeDream, PACI with a = 1, 2BW with m = S) and each
constant delay δ (RPD), this

  1. asks `stale stability` for the predicted largest stable step γ_max (bisection on the
     spectral radius of the one-period operator, src/theory/stability.hpp) and for ρ(γ) on a
     grid of step sizes γ = 2^(i/4) around it;
  2. runs the method itself (`stale run`, full-batch gradients: experiments/
     stability_quadratic.toml has one batch) at every grid γ and calls a run diverged when
     its status is "diverged" (non-finite values) or f − f_* exceeds 1e6 × (f(w_0) − f_*) at
     any logged step; the measured γ_max is the largest grid γ below which no run diverged;
  3. measures the per-period growth of every run from its tail, ρ_meas = (subopt_end /
     subopt_mid)^(1/(2 · periods)) (f − f_* is quadratic in the error), to compare with ρ(γ);
  4. writes results/stability_runs.csv, results/stability_gamma_max.csv, the phase diagram
     results/stability_phase.png and the table results/stability_table.md.

RPD with a constant δ is run as the harness runs it (uniform random stages); it is compared
with two predictions: the expected recursion (all blocks, γ/S, which is exact for the mean of
the iterates) and the cyclic stage order (block k mod S).

    python3 scripts/stability_experiment.py            # about 3 CPU-minutes (2 processes)
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import csv
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
from stale_analysis import load_run, provenance, runner  # noqa: E402  (the scripts folder is sys.path[0])

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BASE = os.path.join(ROOT, "experiments", "stability_quadratic.toml")
GROWTH = 1e6          # divergence: f − f_* above GROWTH × its start
PERIODS = 2000        # run length in periods of the method's pattern
GRID_STEP = 0.25      # γ grid: 2^(i · GRID_STEP)


def stability(stale: str, overrides: list[str], lrs: list[float] | None = None, order: str = "expected",
              gamma_max: bool = True) -> dict:
    cmd = [stale, "stability", BASE, *overrides, "--order", order, "--rel-tol", "1e-6"]
    if lrs:
        cmd += ["--lr", *[repr(g) for g in lrs]]
    if not gamma_max:
        cmd.append("--no-gamma-max")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    res = {"rho": {}, "text": out}
    for line in out.splitlines():
        if line.startswith("gamma="):
            g = float(re.search(r"gamma=(\S+)", line).group(1))
            res["rho"][g] = float(re.search(r" rho=(\S+)", line).group(1))
        elif line.startswith("gamma_max="):
            res["gamma_max"] = float(re.search(r"gamma_max=(\S+)", line).group(1))
        elif line.startswith("state:"):
            res["period"] = int(re.search(r"period (\d+)", line).group(1))
            res["state"] = int(re.search(r"state: (\d+)", line).group(1))
        elif line.startswith("objective:"):
            res["L"] = float(re.search(r" L=(\S+)", line).group(1))
        elif line.startswith("pattern:"):
            m = re.search(r"max delay (\d+)", line)
            res["max_delay"] = int(m.group(1)) if m else None
    return res


def run_one(stale: str, overrides: list[str], gamma: float, updates: int, log_every: int, path: str) -> dict:
    # log.divergence = 0: the run goes on to its end (only a non-finite value stops it), so the
    # per-period growth is measured over the whole run; this script applies its own
    # divergence criterion to the logged f − f_*
    runner.run(stale, BASE, *overrides, f"method.lr={gamma!r}", f"method.updates={updates}", f"log.every={log_every}",
               "log.divergence=0", out=path, force=True)
    run = load_run(path)
    status, sub, k = run.status, run.metrics["subopt"], run.metrics["k"]
    os.remove(path)
    finite = np.isfinite(sub)
    diverged = status == "diverged" or bool(np.any(sub[finite] > GROWTH * sub[0])) or not finite.all()
    # growth per update from the second half of the logged points that lie above the rounding
    # floor (1e-22 of the start) and below overflow; f − f_* is quadratic in the error
    rate = float("nan")
    with np.errstate(invalid="ignore"):
        idx = np.nonzero(finite & (sub > 1e-22 * sub[0]) & (sub < 1e250))[0]
    if len(idx) >= 16:
        a, b = idx[len(idx) // 2], idx[-1]
        rate = (sub[b] / sub[a]) ** (1.0 / (2.0 * (k[b] - k[a])))
    return {"diverged": diverged, "status": status, "rate_per_update": rate, "max_ratio": float(np.nanmax(sub) / sub[0]),
            "end_ratio": float(sub[-1] / sub[0]) if finite.all() else float("inf")}


def cases(args) -> list[dict]:
    out = []
    for S in args.stages:
        out.append({"family": "pipedream", "x": S, "over": [f"objective.stages={S}", "method.name=pipedream"]})
        out.append({"family": "paci", "x": S, "over": [f"objective.stages={S}", "method.name=paci"]})
        out.append({"family": "2bw", "x": S, "over": [f"objective.stages={S}", "method.name=2bw"]})
        d = S * S - S // 2
        out.append({"family": "rpd-pdmax", "x": S, "delta": d,
                    "over": [f"objective.stages={S}", "method.name=rpd", "delay.name=constant", f"delay.max={d}"]})
    for d in args.deltas:
        out.append({"family": "rpd", "x": d, "delta": d,
                    "over": [f"objective.stages={args.rpd_stages}", "method.name=rpd", "delay.name=constant",
                             f"delay.max={d}"]})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stale", default=os.path.join(ROOT, "build", "stale"))
    ap.add_argument("--out", default=os.path.join(ROOT, "results"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--stages", type=int, nargs="+", default=[2, 3, 4, 6, 8, 12, 16])
    ap.add_argument("--deltas", type=int, nargs="+", default=[0, 1, 2, 4, 8, 16, 32, 64])
    ap.add_argument("--rpd-stages", type=int, default=4)
    ap.add_argument("--replot", action="store_true",
                    help="redraw the figure and table from the CSV files in --out (no runs)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.replot:
        return replot(args.out)
    tmp = tempfile.mkdtemp(prefix="stale-stability-")

    all_cases = cases(args)
    # 1. predictions (γ_max, period, state size), in parallel
    def predict(c):
        exp = stability(args.stale, c["over"], order="expected")
        c["pred"] = exp["gamma_max"]
        c["L"], c["period"], c["state"], c["max_delay"] = exp["L"], exp["period"], exp["state"], exp["max_delay"]
        if c["family"].startswith("rpd"):
            c["max_delay"] = c["delta"]
            cyc = stability(args.stale, c["over"], order="cyclic")
            c["pred_cyclic"] = cyc["gamma_max"]
        # the grid: 2^(i/4) from γ_max/8 to 4 γ_max (RPD: around both predictions)
        lo = min(c["pred"], c.get("pred_cyclic", c["pred"])) / 8
        hi = max(c["pred"], c.get("pred_cyclic", c["pred"])) * 4
        i0, i1 = math.floor(math.log2(lo) / GRID_STEP), math.ceil(math.log2(hi) / GRID_STEP)
        c["grid"] = [2.0 ** (i * GRID_STEP) for i in range(i0, i1 + 1)]
        # ρ(γ) at the grid points within a factor 2 of γ_max (each costs one eigenvalue solve)
        near = [g for g in c["grid"] if c["pred"] / 2 <= g <= 2 * c["pred"]]
        rho = stability(args.stale, c["over"], lrs=near, order="expected", gamma_max=False)["rho"] if near else {}
        # the command prints γ to 10 digits
        c["rho"] = [rho[min(rho, key=lambda g: abs(g - x))] if rho and min(abs(g - x) for g in rho) <= 1e-8 * x
                    else float("nan") for x in c["grid"]]
        return c

    with cf.ThreadPoolExecutor(args.jobs) as ex:
        all_cases = list(ex.map(predict, all_cases))
    print(f"predictions done ({len(all_cases)} cases)", file=sys.stderr)

    # 2. runs on the grid
    jobs = []
    for ci, c in enumerate(all_cases):
        P = c["period"] if not c["family"].startswith("rpd") else c["over"][0].split("=")[1]
        P = int(P)
        updates = PERIODS * P + 64 * P
        for gi, g in enumerate(c["grid"]):
            jobs.append((ci, gi, g, updates, max(1, P)))

    def work(j):
        ci, gi, g, updates, every = j
        c = all_cases[ci]
        path = os.path.join(tmp, f"r{ci}_{gi}.h5")
        return j, run_one(args.stale, c["over"], g, updates, every, path)

    rows = []
    with cf.ThreadPoolExecutor(args.jobs) as ex:
        for (ci, gi, g, updates, every), r in ex.map(work, jobs):
            c = all_cases[ci]
            P = updates // (PERIODS + 64)
            # ρ of the pattern's period, turned into growth per P updates (the expected
            # recursion of RPD has a one-update period; runs are measured per S updates)
            rows.append({"family": c["family"], "x": c["x"], "gamma": g, "gamma_L": g * c["L"],
                         "rho_pred": c["rho"][gi] ** (P / c["period"]), "rho_meas": r["rate_per_update"] ** P if r["rate_per_update"] == r["rate_per_update"] else float("nan"),
                         "diverged": int(r["diverged"]), "status": r["status"], "max_ratio": r["max_ratio"],
                         "end_ratio": r["end_ratio"],
                         "updates": updates})
    os.rmdir(tmp)

    # 3. measured boundary: the largest grid γ below which (and at which) no run diverged
    for c in all_cases:
        rs = sorted((r for r in rows if r["family"] == c["family"] and r["x"] == c["x"]), key=lambda r: r["gamma"])
        meas = None
        for r in rs:
            if r["diverged"]:
                break
            meas = r["gamma"]
        c["meas"] = meas
        c["first_div"] = next((r["gamma"] for r in rs if r["diverged"]), None)

    with open(os.path.join(args.out, "stability_runs.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()))
        w.writeheader()
        for r in sorted(rows, key=lambda r: (r["family"], r["x"], r["gamma"])):
            w.writerow(r)
    fields = ["family", "x", "delta", "period", "state", "max_delay", "L", "pred", "pred_cyclic", "meas", "first_div"]
    with open(os.path.join(args.out, "stability_gamma_max.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for c in all_cases:
            w.writerow({k: c.get(k, "") for k in fields})

    write_table(all_cases, rows, os.path.join(args.out, "stability_table.md"))
    plot(all_cases, rows, os.path.join(args.out, "stability_phase.png"))
    provenance.stamp([os.path.join(args.out, n) for n in ("stability_runs.csv", "stability_gamma_max.csv",
                                                          "stability_table.md", "stability_phase.png")],
                     provenance.command_line(), args.out, args.stale)
    return 0


def replot(out: str) -> int:
    def num(v):
        try:
            return float(v)
        except (TypeError, ValueError):
            return None

    cases_ = []
    with open(os.path.join(out, "stability_gamma_max.csv")) as fh:
        for r in csv.DictReader(fh):
            c = {"family": r["family"], "x": int(r["x"]), "period": int(r["period"]), "state": int(r["state"]),
                 "max_delay": r["max_delay"], "L": float(r["L"]), "pred": float(r["pred"]),
                 "meas": num(r["meas"]), "first_div": num(r["first_div"])}
            if r["pred_cyclic"]:
                c["pred_cyclic"] = float(r["pred_cyclic"])
            cases_.append(c)
    rows = []
    with open(os.path.join(out, "stability_runs.csv")) as fh:
        for r in csv.DictReader(fh):
            rows.append({**r, "x": int(r["x"]), "gamma": float(r["gamma"]), "gamma_L": float(r["gamma_L"]),
                         "rho_pred": float(r["rho_pred"]), "rho_meas": float(r["rho_meas"]),
                         "diverged": int(r["diverged"])})
    write_table(cases_, rows, os.path.join(out, "stability_table.md"))
    plot(cases_, rows, os.path.join(out, "stability_phase.png"))
    return 0


def loglog_slope(xs, ys):
    """The least-squares slope of log y on log x: a description of predicted and measured γ_max
    across S or δ, without intervals (stale_analysis.fits.fit_exponent is the fit with seeds and
    bootstrap intervals that verdicts rest on; this one decides nothing)."""
    xs, ys = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    slope, _ = np.polyfit(xs, ys, 1)
    return slope


def write_table(cases_, rows, path):
    lines = ["| method | S or δ | max delay | period | state | γ_max·L predicted | γ_max·L cyclic | measured (grid) | "
             "first diverged | pred/meas | prediction in [measured, first diverged) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cases_:
        L = c["L"]
        cyc = f"{c['pred_cyclic'] * L:.4g}" if "pred_cyclic" in c else ""
        meas = f"{c['meas'] * L:.4g}" if c["meas"] else "—"
        first = f"{c['first_div'] * L:.4g}" if c["first_div"] else "—"
        ratio = f"{c['pred'] / c['meas']:.3f}" if c["meas"] else "—"

        def inside(g):
            return "yes" if c["meas"] and c["first_div"] and c["meas"] <= g < c["first_div"] else "no"

        within = inside(c["pred"]) + (f" (cyclic: {inside(c['pred_cyclic'])})" if "pred_cyclic" in c else "")
        lines.append(f"| {c['family']} | {c['x']} | {c['max_delay']} | {c['period']} | {c['state']} | "
                     f"{c['pred'] * L:.5g} | {cyc} | {meas} | {first} | {ratio} | {within} |")
    lines.append("")
    lines.append("Exponents of γ_max against S (fit of log γ_max on log S over S ≥ 4) and against δ (δ ≥ 4):")
    lines.append("")
    for fam in ["pipedream", "paci", "2bw", "rpd-pdmax"]:
        cs = [c for c in cases_ if c["family"] == fam and c["x"] >= 4]
        if len(cs) >= 2:
            e = loglog_slope([c["x"] for c in cs], [c["pred"] for c in cs])
            line = f"- {fam}: predicted γ_max ∝ S^{e:.3f}"
            if "pred_cyclic" in cs[0]:
                line += f" (cyclic order: S^{loglog_slope([c['x'] for c in cs], [c['pred_cyclic'] for c in cs]):.3f})"
            ms = [c for c in cs if c["meas"]]
            if len(ms) >= 2:
                line += f"; measured ∝ S^{loglog_slope([c['x'] for c in ms], [c['meas'] for c in ms]):.3f}"
            lines.append(line)
    cs = [c for c in cases_ if c["family"] == "rpd" and c["x"] >= 4]
    if len(cs) >= 2:
        line = (f"- rpd (S fixed): predicted γ_max ∝ δ^{loglog_slope([c['x'] for c in cs], [c['pred'] for c in cs]):.3f}"
                f" (cyclic order: δ^{loglog_slope([c['x'] for c in cs], [c['pred_cyclic'] for c in cs]):.3f})")
        ms = [c for c in cs if c["meas"]]
        if len(ms) >= 2:
            line += f"; measured ∝ δ^{loglog_slope([c['x'] for c in ms], [c['meas'] for c in ms]):.3f}"
        lines.append(line)
    lines.append("")
    lines.append("Per-period growth ρ measured from the runs' f − f_* against the prediction ρ(γ) (runs whose "
                 "f − f_* stayed above 1e-22 of its start for the second half of the measured window):")
    lines.append("")
    lines.append("| method | runs compared | median abs(ρ_meas/ρ_pred − 1) | max |")
    lines.append("|---|---|---|---|")
    for fam in ["pipedream", "paci", "2bw", "rpd-pdmax", "rpd"]:
        errs = [abs(r["rho_meas"] / r["rho_pred"] - 1) for r in rows if r["family"] == fam
                and r["rho_pred"] == r["rho_pred"] and r["rho_meas"] == r["rho_meas"]]
        if errs:
            lines.append(f"| {fam} | {len(errs)} | {np.median(errs):.2e} | {max(errs):.2e} |")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def plot(cases_, rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("pipedream", "PipeDream (stash, step per B)", "S"), ("paci", "PACI (a = 1)", "S"),
              ("2bw", "2BW (m = S)", "S"), ("rpd-pdmax", "RPD, constant δ = S² − S/2", "S"),
              ("rpd", "RPD, constant δ (S = 4)", "δ")]
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    fig, grid = plt.subplots(2, 3, figsize=(13.5, 8.2))
    axes = grid.ravel()
    for ax, (fam, title, xl) in zip(axes, panels):
        cs = sorted((c for c in cases_ if c["family"] == fam), key=lambda c: c["x"])
        if not cs:
            continue
        L = cs[0]["L"]
        xs = [c["x"] for c in cs]
        xplot = [x if x > 0 else 0.5 for x in xs]  # δ = 0 on a log axis
        pred = [c["pred"] * c["L"] for c in cs]
        ax.fill_between(xplot, 1e-6, pred, color="tab:green", alpha=0.12, step=None)
        ax.plot(xplot, pred, "-", color="tab:green",
                label="predicted γ_max, expected recursion (all blocks, γ/S)" if fam.startswith("rpd")
                else "predicted γ_max (ρ = 1)")
        if "pred_cyclic" in cs[0]:
            ax.plot(xplot, [c["pred_cyclic"] * c["L"] for c in cs], "--", color="tab:purple",
                    label="predicted, cyclic order")
        for c, xp in zip(cs, xplot):
            rs = [r for r in rows if r["family"] == fam and r["x"] == c["x"]]
            ok = [r["gamma_L"] for r in rs if not r["diverged"]]
            bad = [r["gamma_L"] for r in rs if r["diverged"]]
            ax.plot([xp] * len(ok), ok, "o", ms=3, color="tab:blue", alpha=0.6)
            ax.plot([xp] * len(bad), bad, "x", ms=4, color="tab:red", alpha=0.8)
        ax.plot([], [], "o", color="tab:blue", label="run: not diverged")
        ax.plot([], [], "x", color="tab:red", label="run: diverged")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(xplot)
        ax.set_xticklabels([str(x) for x in xs])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(xl + (" (δ = 0 drawn at 0.5)" if fam == "rpd" else ""))
        ax.set_ylabel("γ · L")
        ax.set_title(title, fontsize=10)
        allg = [r["gamma_L"] for r in rows if r["family"] == fam]
        ax.set_ylim(min(allg) / 1.3, max(allg) * 1.3)
    axes[0].legend(fontsize=7, loc="lower left")
    axes[4].legend(fontsize=7, loc="lower left")
    rho_panel(axes[5], rows)
    fig.suptitle("Predicted stability boundary (ρ of the one-period operator = 1) vs measured divergence "
                 "(f − f_* > 1e6 × start), random least squares d = 32, one batch", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def rho_panel(ax, rows):
    styles = {"pipedream": ("o", "tab:blue"), "paci": ("s", "tab:orange"), "2bw": ("^", "tab:green"),
              "rpd-pdmax": ("x", "tab:red"), "rpd": ("+", "tab:purple")}
    for fam, (m, col) in styles.items():
        pts = [(r["rho_pred"], r["rho_meas"]) for r in rows if r["family"] == fam
               and r["rho_pred"] == r["rho_pred"] and r["rho_meas"] == r["rho_meas"]]
        if pts:
            label = fam + (" (random stages vs expected recursion)" if fam.startswith("rpd") else "")
            ax.plot(*zip(*pts), m, color=col, ms=5, alpha=0.8, label=label, linestyle="none", fillstyle="none")
    lim = [min(min(r["rho_pred"] for r in rows if r["rho_pred"] == r["rho_pred"]), 0.8), 2.5]
    ax.plot(lim, lim, "k-", lw=0.6)
    ax.axvline(1, color="gray", lw=0.5, ls=":")
    ax.axhline(1, color="gray", lw=0.5, ls=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("predicted ρ(γ) per period")
    ax.set_ylabel("measured growth per period (from f − f_*)")
    ax.legend(fontsize=7)
    ax.set_title("Growth per period: prediction vs run", fontsize=10)


if __name__ == "__main__":
    sys.exit(main())
