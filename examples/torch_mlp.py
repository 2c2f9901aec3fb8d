"""Your own PyTorch model under exact pipeline staleness (README "Your own model").

A 4-stage MLP written in plain PyTorch, trained by PipeDream (weight stashing), PACI (no
stashing, stage s holds S - s micro-batches) and 1F1B with a flush (mini-batch SGD) on the same
simulated-time budget: the training loss against simulated time, one figure. Each run's file
goes to runs/torch_mlp_<method>.h5 (metrics, delays, schedule, config). About 15 s on one core.

    pip install '.[torch]'             # or: bash scripts/install_python.sh, with torch installed
    python3 examples/torch_mlp.py      # → runs/torch_mlp.png, one summary line per method
"""
import os

import matplotlib
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import stale  # noqa: E402
import stale.torch  # noqa: E402

# %% the user code: data, a model in plain PyTorch, three methods, one figure
torch.set_num_threads(1)  # ops this small lose more to threads' barriers than they gain
g = torch.Generator().manual_seed(0)
X = torch.randn(1024, 16, generator=g)
y = (X[:, :8].sum(1) > 0).long() + (X[:, 8:].sum(1) > 0).long()  # three classes


def mlp():  # stage s = child s
    torch.manual_seed(0)
    hidden = lambda i: torch.nn.Sequential(torch.nn.Linear(i, 64), torch.nn.ReLU())  # noqa: E731
    return torch.nn.Sequential(hidden(16), hidden(64), hidden(64), torch.nn.Linear(64, 3))


os.makedirs("runs", exist_ok=True)
fig, ax = plt.subplots(figsize=(7, 4))
for method in ("pipedream", "paci", "1f1b-flush"):
    model = stale.torch.TorchStages(mlp(), (X, y), torch.nn.functional.cross_entropy, batch_size=16,
                                    dtype=torch.float32, name="mlp", constants={"f_low": 0.0})  # cross-entropy ≥ 0
    run = stale.run({"method.name": method, "method.lr": 0.05, "method.time_budget": 1500.0, "log.every": 64},
                    model=model, out=f"runs/torch_mlp_{method}.h5", force=True)
    print(run)
    ax.plot(run.series("time"), run.series("loss"), label=f"{method} (K = {run.summary['k']})")
ax.set(xlabel="simulated time (t_F = t_B = 1)", ylabel="training loss f(w)", title="4-stage MLP, float32")
ax.legend()
fig.savefig("runs/torch_mlp.png", dpi=120, bbox_inches="tight")
print("runs/torch_mlp.png")
