#!/usr/bin/env python3
"""Where LocalSGD beats PipeDream on logistic regression (issue 14, item 4) →
results/localsgd_crossover.{md,png}.

E3's verdict (results/REPRODUCTION.md) is that PD beats LocalSGD on our synthetic logistic data,
while the paper reports LocalSGD ahead. This maps the two methods over the data's size
n/d and the gradient noise σ (objective.grad_noise_std, Gaussian noise on every block
gradient), at a common budget of simulated time slots, each method at its own best step size:

  - synthetic logistic regression (X ~ N(0, I), w_true ~ N(0, I), y ~ Bernoulli(σ(X w_true)),
    λ = 1e-4), d = 64, batch 4, S = R = 8 stages/replicas, 1230 slots (E3's budget);
  - n/d ∈ {0.5, 1, 4, 16}, σ ∈ {0, 0.5, 1, 2, 4, 8};
  - PD (pipedream) against LocalSGD with H = 5 (E3's best H);
  - γ ∈ 2^-12 .. 2^3; the best γ is the one with the lowest mean final f − f_* over seeds 0, 1, 2
    (a diverged seed counts as +inf), and the table gives that mean for each method.

Every run happens in this process through the Python package, on worker threads.

    python3 scripts/localsgd_crossover.py [--jobs 2]
"""
import argparse
import itertools
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import stale
from stale.analysis import grid_edge
from stale_analysis import provenance  # noqa: E402  (the scripts folder is sys.path[0])

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
D = 64
RATIOS = (0.5, 1, 4, 16)
NOISES = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0)
METHODS = {"PD": {"method.name": "pipedream"}, "LocalSGD H=5": {"method.name": "localsgd", "method.local_steps": 5}}
LRS = [2.0**e for e in range(-12, 4)]
SEEDS = (0, 1, 2)
# the lower end of a coarser step-size grid (the second table): where PD's best γ is cut off
RESTRICTED = 2.0**-8
BASE = {"objective": {"name": "logistic", "generator": "synthetic", "dim": D, "batch_size": 4, "stages": 8,
                      "l2": 1e-4},
        "method": {"time_budget": 1230}, "log": {"every": 64, "exact_mean": "false", "iterates_every": 0,
                                                  "delays": False, "progress": False}}


def final(ratio, noise, method, lr, seed) -> float:
    over = {"objective.samples": int(ratio * D), "objective.grad_noise_std": noise, "method.lr": lr, "seed": seed,
            **METHODS[method]}
    r = stale.run(BASE, **over)
    v = float(r.metrics["subopt"].iloc[-1])
    return v if r.status == "ok" and np.isfinite(v) else float("inf")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="runs at once (threads)")
    p.add_argument("--out", default=os.path.join(ROOT, "results", "localsgd_crossover"), help="path stem")
    a = p.parse_args()
    start, cpu0 = time.time(), time.process_time()
    tasks = list(itertools.product(RATIOS, NOISES, METHODS, LRS, SEEDS))
    with ThreadPoolExecutor(a.jobs) as pool:
        values = dict(zip(tasks, pool.map(lambda t: final(*t), tasks)))
    wall, cpu = time.time() - start, time.process_time() - cpu0

    def best_of(lrs):  # (ratio, noise, method) → (mean final, γ) over the step sizes lrs
        out = {}
        for ratio, noise, method in itertools.product(RATIOS, NOISES, METHODS):
            out[(ratio, noise, method)] = min(
                (np.mean([values[(ratio, noise, method, lr, s)] for s in SEEDS]), lr) for lr in lrs)
        return out

    def table(best):
        rows = ["| n/d \\ σ | " + " | ".join(f"σ = {s:g}" for s in NOISES) + " |", "|---|" + "---|" * len(NOISES)]
        grid = np.zeros((len(RATIOS), len(NOISES)))
        for i, ratio in enumerate(RATIOS):
            cells = []
            for j, noise in enumerate(NOISES):
                pd_, pd_lr = best[(ratio, noise, "PD")]
                ls, ls_lr = best[(ratio, noise, "LocalSGD H=5")]
                grid[i, j] = pd_ / ls
                mark = " **LocalSGD**" if pd_ > 1.05 * ls else ""  # ahead by more than 5%
                cells.append(f"{pd_:.3g} / {ls:.3g} (×{pd_ / ls:.2g}; γ 2^{np.log2(pd_lr):.0f} / "
                             f"2^{np.log2(ls_lr):.0f}){mark}")
            rows.append(f"| {ratio:g} (n = {int(ratio * D)}) | " + " | ".join(cells) + " |")
        return rows, grid

    best = best_of(LRS)
    restricted = best_of([lr for lr in LRS if lr >= RESTRICTED])
    full_rows, ratio_grid = table(best)
    cut_rows, cut_grid = table(restricted)
    edge = [k for k, (_, lr) in best.items() if grid_edge(lr, LRS)]
    lines = ["# LocalSGD against PipeDream on logistic regression: where the crossover lies", "",
             f"Made by `python3 scripts/localsgd_crossover.py` ({len(tasks)} runs, {wall:.0f} s wall, "
             f"{cpu:.0f} CPU s on the 2-core development machine).",
             f"Synthetic logistic regression, d = {D}, batch 4, λ = 1e-4, S = R = 8, 1230 slots. Cells: final",
             "f − f_* of PD / LocalSGD (H = 5), each at its best γ (lowest mean final f − f_* over seeds 0, 1, 2),",
             "the ratio PD / LocalSGD (> 1: LocalSGD ahead; marked when > 1.05) and the two step sizes.", "",
             "## Every step size of the grid, γ ∈ 2⁻¹²..2³", ""] + full_rows + [
             "", f"Best step sizes at an end of the grid: {len(edge)}" + (f" ({edge})" if edge else "") + ".", "",
             f"## Step sizes restricted to γ ≥ 2^{np.log2(RESTRICTED):.0f}", ""] + cut_rows
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, ratio in enumerate(RATIOS):
        line, = ax.plot(NOISES, ratio_grid[i], "o-", label=f"n/d = {ratio:g}")
        ax.plot(NOISES, cut_grid[i], "x:", color=line.get_color())
    ax.axhline(1, color="k", lw=0.8, ls="--")
    ax.set(xscale="symlog", yscale="log", xlabel="gradient noise σ (objective.grad_noise_std)",
           ylabel="final f − f* of PD / of LocalSGD (H = 5)",
           title="LocalSGD ahead above the dashed line (logistic, S = R = 8, 1230 slots);\n"
                 f"solid: γ ∈ 2^-12..2^3, dotted: γ ≥ 2^{np.log2(RESTRICTED):.0f}")
    ax.title.set_fontsize(9)
    ax.legend(fontsize="small")
    fig.savefig(a.out + ".png", dpi=120, bbox_inches="tight")
    provenance.stamp([a.out + ".md", a.out + ".png"], provenance.command_line(), os.path.dirname(a.out) or ".", None)
    print(f"wrote {a.out}.md, {a.out}.png", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
