"""The README's main figure from Python (a notebook in script form: run it, or paste the cells).

RPD on the random least-squares problem of the RPD paper's E1 setup (d = 512, n = 600, S = 8,
γ = 2⁻⁶, 3200 block updates) with uniform delays up to δ ∈ {0, 8, 60, 420}, three seeds each:
f − f_* against k, the median and the range over the seeds. Every run happens in this process,
nothing is written but the figure. About 5 s on one core.

    pip install .                    # or: bash scripts/install_python.sh
    python3 examples/quickstart.py   # → quickstart.png, and the final f − f_* per δ
"""
import argparse
import os

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import stale  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--out", default="runs/quickstart.png", help="the figure (default: runs/quickstart.png)")
args = parser.parse_args()

# %% the user code: 12 runs, one figure
config = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "experiments", "main_rpd_delays.toml")
fig, ax = plt.subplots(figsize=(7, 4))
for delta in (0, 8, 60, 420):
    runs = [stale.run(config, seed=s, **{"delay.max": delta}) for s in (0, 1, 2)]
    k = runs[0].metrics["k"]
    curves = np.array([r.metrics["subopt"] for r in runs])
    ax.plot(k, np.median(curves, axis=0), label=f"δ = {delta}")
    ax.fill_between(k, curves.min(axis=0), curves.max(axis=0), alpha=0.2)
    print(f"delta={delta:3d}  final f-f* (median of 3 seeds) = {np.median(curves[:, -1]):.4g}")
ax.set(yscale="log", xlabel="block updates k", ylabel="f − f*", title="RPD, random least squares, γ = 2⁻⁶")
ax.legend()
os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
fig.savefig(args.out, dpi=120, bbox_inches="tight")
print(f"wrote {args.out}")
