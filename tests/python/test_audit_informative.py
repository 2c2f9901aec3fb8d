"""scripts/audit_informative.py (THEORY.md rows 1-2 where the bound can fail): the bound with G fixed
by the pilot is rebuilt from the logged terms, the mean over seeds is judged against it only at
informative K, and a configuration whose checks cannot fail is "not informative", never "holds".
Synthetic sweeps written with h5py: the answers are known exactly."""
from __future__ import annotations

import os
import sys

import h5py
import numpy as np

from conftest import SCRIPTS, write_sweep

sys.path.insert(0, SCRIPTS)
import audit_informative  # noqa: E402

S, DELTA, L, D0 = 4, 16, 1.0, 0.5
K = np.arange(10, 1010, 10, dtype=float)


def terms(c, G):
    lr = c / L
    return 2 * S * D0 / (lr * K), lr * S * L * G ** 2 + 0 * K, lr ** 2 * L ** 2 * DELTA ** 2 * G ** 2 + 0 * K


def sweep(tmp_path, c, scale, G_run=1.0, G_pilot=1.0):
    """seeds 0-4 measuring scale × the fixed-G bound (±5 %), and the pilot (seed 1000)"""
    rng = np.random.default_rng(0)
    pts = []
    for seed in [0, 1, 2, 3, 4, 1000]:
        G = G_pilot if seed == 1000 else G_run
        opt, stoch, stale = terms(c, G)
        fixed = opt + (stoch + stale) * (G_pilot / G) ** 2
        measured = scale * fixed * (1 + 0.05 * rng.standard_normal(len(K)))
        pts.append(({"seed": seed, "objective.nonconvex_reg": 0.1, "delay.name": "uniform", "delay.max": DELTA,
                     "method.lr": c / L, "objective.stages": S, "method.updates": int(K[-1])},
                    np.linspace(1, 0.5, len(K)), "ok", {"measured": measured, "G": G, "L": L,
                                                        "bound": opt + stoch + stale}))
    d = write_sweep(tmp_path / f"c{c}_s{scale}", pts)
    for i, (_, _, _, extra) in enumerate(pts):
        with h5py.File(os.path.join(d, "runs", f"r{i}.h5"), "r+") as f:
            opt, stoch, stale = terms(c, extra["G"])
            m = f["metrics"]
            del m["k"], m["bound_stale"]
            m["k"], m["bound_opt"], m["bound_stoch"], m["bound_stale"] = K, opt, stoch, stale
    return d


def test_the_fixed_g_bound_holds_fails_or_is_not_informative_as_built(tmp_path):
    holds = sweep(tmp_path, 2 ** -4, 0.5)       # c + c²δ²/S = 0.31: informative, half the bound
    broken = sweep(tmp_path, 2 ** -5, 2.0)      # 0.094: informative, twice the bound
    vacuous = sweep(tmp_path, 1.0, 1e-4)        # 65: the bound lies far above S·G², the mean far below it
    rows = {r["c"]: r for r in audit_informative.audit([holds, broken, vacuous], str(tmp_path / "res"))}
    assert rows[round(2 ** -4, 6)]["verdict"] == "holds" and rows[round(2 ** -4, 6)]["informative"] > 90
    assert rows[round(2 ** -5, 6)]["verdict"] == "**violated**"
    assert rows[1.0]["verdict"] == "not informative" and rows[1.0]["informative"] == 0
    text = (tmp_path / "res" / "audit_informative.md").read_text()
    assert "not informative: 1" in text and "violated: 1" in text


def test_the_pilots_g_replaces_the_running_g_in_the_bounds_g_terms(tmp_path):
    # runs whose own G is twice the pilot's: their logged bound is 4× larger in its G-terms; a mean at
    # 1.3 × the fixed-G bound lies below the logged (running-G) bound, and is a violation only if the
    # fixed G is used
    d = sweep(tmp_path, 2 ** -4, 0.5, G_run=2.0, G_pilot=1.0)
    (row,) = audit_informative.audit([d], str(tmp_path / "res"))
    assert row["verdict"] == "holds" and row["hyp"] == 0  # the hypothesis G_K ≤ G failed in every run: counted
    d2 = sweep(tmp_path / "x", 2 ** -4, 1.3, G_run=2.0, G_pilot=1.0)
    (row2,) = audit_informative.audit([d2], str(tmp_path / "res2"))
    assert row2["verdict"] == "**violated**"
