"""Arrays from Python: stale.run(config, X=X, y=y) gives, bit for bit, the run that the same
arrays give when written to an .npz and read with objective.generator = "file"."""
from __future__ import annotations

import numpy as np
import pytest

stale = pytest.importorskip("stale", reason="the Python package is not installed (pip install .)")

from test_package import SERIES  # noqa: E402


def data(n=120, d=24, logistic=False, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = rng.standard_normal(d)
    if logistic:
        y = np.where(X @ w + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    else:
        y = X @ w + 0.1 * rng.standard_normal(n)
    return X, y, w


CONFIGS = {
    "quadratic": {"objective": {"name": "quadratic", "batch_size": 10, "stages": 4},
                  "method": {"name": "rpd", "lr": 0.01, "updates": 400}, "delay": {"name": "uniform", "max": 6},
                  "log": {"every": 5}},
    "logistic": {"objective": {"name": "logistic", "batch_size": 8, "stages": 4, "l2": 1e-3},
                 "method": {"name": "pipedream", "lr": 0.05, "updates": 240}, "log": {"every": 4}},
}


def same(a, b):
    for name in SERIES:
        np.testing.assert_array_equal(a.series(name), b.series(name), err_msg=name, strict=True)
    np.testing.assert_array_equal(a.iterates, b.iterates, strict=True)
    if a.delays is not None or b.delays is not None:
        np.testing.assert_array_equal(a.delays, b.delays)
    for key in ("L", "mu", "f_star", "G", "Delta0", "K"):
        assert a.theory[key] == b.theory[key], key


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_arrays_equal_the_npz_file(tmp_path, kind):
    X, y, w = data(logistic=kind == "logistic")
    path = tmp_path / "data.npz"
    np.savez(path, X=X, y=y)
    from_file = stale.run(CONFIGS[kind], **{"objective.generator": "file", "objective.data": str(path)})
    from_arrays = stale.run(CONFIGS[kind], X=X, y=y)
    same(from_file, from_arrays)
    assert from_arrays.objective["n"] == 120 and from_arrays.objective["d"] == 24
    assert from_arrays.config["objective.generator"] == "file"
    # the layout does not matter: Fortran order (copied straight into the model), a float32
    # copy that is exactly representable, y as a column
    same(from_arrays, stale.run(CONFIGS[kind], X=np.asfortranarray(X), y=y[:, None]))
    Xs = X[:, ::-1][:, ::-1]  # a strided view
    same(from_arrays, stale.run(CONFIGS[kind], X=Xs, y=y))


def test_arrays_with_w_true_equal_the_npz_file(tmp_path):
    X, _, w = data()
    y = X @ w
    path = tmp_path / "data.npz"
    np.savez(path, X=X, y=y, w_true=w)
    cfg = CONFIGS["quadratic"]
    same(stale.run(cfg, **{"objective.generator": "file", "objective.data": str(path)}),
         stale.run(cfg, X=X, y=y, w_true=w))


def test_bad_arrays_are_config_errors():
    X, y, _ = data()
    cfg = CONFIGS["quadratic"]
    bad = X.copy()
    bad[3, 5] = np.nan
    with pytest.raises(stale.ConfigError, match=r"X\[3, 5\] is not finite"):
        stale.run(cfg, X=bad, y=y)
    with pytest.raises(stale.ConfigError, match="y has 119 entries but X has n = 120"):
        stale.run(cfg, X=X, y=y[:-1])
    with pytest.raises(stale.ConfigError, match="not binary"):
        stale.run(CONFIGS["logistic"], X=X, y=y)
    with pytest.raises(stale.ConfigError, match="2-D"):
        stale.run(cfg, X=X[0], y=y)
    with pytest.raises(stale.ConfigError, match="both X and y"):
        stale.run(cfg, X=X)
    with pytest.raises(stale.ConfigError, match="objective.generator"):
        stale.run(cfg, X=X, y=y, **{"objective.generator": "random"})
    with pytest.raises(stale.ConfigError, match="objective.stages"):
        stale.run(cfg, X=X[:, :2], y=y)


def test_which_objectives_take_arrays_is_the_registrys_answer():
    """ObjectiveEntry::array_data decides (not a list of names): the refusal of an objective
    without it names exactly the entries that take arrays; stale.objective's refusal names exactly
    the entries that export their arrays (ObjectiveEntry::export_arrays)."""
    X, y, _ = data()
    with pytest.raises(stale.ConfigError, match=r'objective.name.*"robust" takes no arrays X, y; choose quadratic or logistic') as e:
        stale.run({**CONFIGS["quadratic"], "objective": {**CONFIGS["quadratic"]["objective"], "name": "robust"}}, X=X, y=y)
    assert "\n" not in str(e.value)
    with pytest.raises(stale.ConfigError, match=r"stale.objective exports the objectives whose registry entries offer "
                                                r"their arrays \(quadratic, logistic or charlm\)"):
        stale.objective({"objective": {"name": "robust", "dim": 8, "samples": 64, "batch_size": 8, "stages": 2}})
    # a real (not ±1) y is refused only where the entry says its labels are classes
    stale.run({**CONFIGS["quadratic"], "method": {**CONFIGS["quadratic"]["method"], "updates": 8}}, X=X, y=y)
    with pytest.raises(stale.ConfigError, match="not binary"):
        stale.run(CONFIGS["logistic"], X=X, y=y)


def test_objective_data_round_trip(tmp_path):
    """stale.objective returns the data a config's runs optimise: fed back as arrays, they
    give the same run bit for bit, and the constants are those of the run."""
    cfg = dict(CONFIGS["quadratic"], objective={**CONFIGS["quadratic"]["objective"], "generator": "random",
                                                "dim": 24, "samples": 120})
    o = stale.objective(cfg)
    assert o["X"].shape == (120, 24) and o["y"].shape == (120,) and o["batch_offsets"][-1] == 120
    generated = stale.run(cfg)
    assert generated.theory["L"] == o["L"] and generated.theory["f_star"] == o["f_star"]
    # f_* = 0 at w_* = w_true: the random generator has no noise
    np.testing.assert_allclose(o["w_star"], o["w_true"], rtol=0, atol=1e-8)
    again = stale.run({k: v for k, v in cfg.items() if k != "objective"} |
                      {"objective": {k: v for k, v in cfg["objective"].items() if k not in ("generator", "dim", "samples")}},
                      X=o["X"], y=o["y"], w_true=o["w_true"])
    same(generated, again)


def test_objective_sparse_data_as_csr_arrays(tmp_path):
    """LIBSVM data stored sparse (objective.storage = "sparse") come back as the CSR arrays
    (indptr, indices, data, shape) with X = None; densified, they are the dense load of the
    same file, and the constants agree with the dense objective's to the solvers' tolerance."""
    lines = ["1 1:0.5 3:-1.25", "0 2:2.0", "1 1:-0.75 2:0.5 4:1.0", "0 3:0.25 4:-2.0",
             "1 2:1.5 3:0.5", "0 1:1.0 4:0.75"]
    path = tmp_path / "tiny.libsvm"
    path.write_text("\n".join(lines) + "\n")
    base = {"objective": {"name": "logistic", "generator": "libsvm", "data": str(path), "batch_size": 2,
                          "stages": 2, "l2": 1e-2},
            "method": {"name": "sgd", "lr": 0.1, "updates": 10}}
    sparse = stale.objective(base | {"objective": base["objective"] | {"storage": "sparse"}})
    dense = stale.objective(base | {"objective": base["objective"] | {"storage": "dense"}})
    assert sparse["X"] is None and dense["X"] is not None
    csr = sparse["X_csr"]
    n, d = csr["shape"]
    assert (n, d) == dense["X"].shape
    X = np.zeros((n, d))
    for i in range(n):
        lo, hi = csr["indptr"][i], csr["indptr"][i + 1]
        X[i, csr["indices"][lo:hi]] = csr["data"][lo:hi]
    np.testing.assert_array_equal(X, dense["X"])
    np.testing.assert_array_equal(sparse["y"], dense["y"])
    assert sparse["f_star"] == pytest.approx(dense["f_star"], rel=1e-9)
    assert sparse["L"] == pytest.approx(dense["L"], rel=1e-9)
