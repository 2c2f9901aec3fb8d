"""A stage-wise model defined in Python (stale.StageModel, python/stale/model.py) under the
harness's own methods: the NumPy least-squares stages (stale.least_squares) reproduce the
built-in `quadratic` objective's runs for every registered method and delay model (the
registries are looped over: a new method is covered without an edit), a run is resumed from its
checkpoint bit for bit, a model without constants gets a bound with its L estimated, and bad
models are one-line stale.ConfigErrors that leave no file. The PyTorch adapter's tests are in
test_stage_model_torch.py."""
from __future__ import annotations

import os

import numpy as np
import pytest

stale = pytest.importorskip("stale", reason="the Python package is not installed (pip install .)")
from stale.least_squares import LeastSquaresStages  # noqa: E402

# the built-in objective: a small random least-squares problem, S = 4 stages, M = 8 batches
OBJECTIVE = {"objective.name": "quadratic", "objective.generator": "random", "objective.dim": 16,
             "objective.samples": 40, "objective.batch_size": 5, "objective.stages": 4}
# what both runs share; log.exact_mean is set because its default differs (exact where a
# tracker makes it cheap: the built-in objective only)
RUN = {"seed": 3, "method.lr": 0.05, "method.updates": 64, "log.every": 1, "log.exact_mean": True,
       "log.progress": False}
# the Python stage model reproduces the built-in objective to this relative tolerance: the two
# sum X_m w in different orders (column order in C++, BLAS in NumPy) and the built-in objective
# moves ∇f along the run instead of recomputing it, so each number differs by rounding only
RTOL = 1e-12
# the delay models' keys (a model with a key not listed here fails the loop below: add its value)
DELAY_KEYS = {"delay.max": 3, "delay.mean": 1.5, "delay.table_repeat": True, "delay.schedule": "pipedream",
              "delay.follow_order": False, "delay.profile": [3, 2, 1, 0]}
# every /metrics series but the wall clock
SERIES = [n for n in stale._stale.metric_names() if n != "wall"]


def least_squares(**kw):
    """the built-in objective's data: its generator draws from the run's seed"""
    return LeastSquaresStages({**OBJECTIVE, "seed": RUN["seed"]}, **kw)


def assert_runs_close(a, b, rtol=RTOL):
    """Every logged series, the iterates, delays and the theory record of two runs agree to rtol
    (relative, elementwise for the series, in norm per row for the iterates; NaN where the other
    has NaN); what is counted (k, stages, batches, delays) is equal."""
    assert (a.status, a.message) == (b.status, b.message)
    for name in SERIES:
        x, y = a.series(name), b.series(name)
        if x.dtype.kind in "iu":
            np.testing.assert_array_equal(x, y, err_msg=name)
        else:
            np.testing.assert_allclose(x, y, rtol=rtol, atol=0, equal_nan=True, err_msg=name)
    np.testing.assert_array_equal(a.iterates_k, b.iterates_k)
    diff = np.linalg.norm(a.iterates - b.iterates, axis=1)
    assert np.all(diff <= rtol * np.linalg.norm(b.iterates, axis=1)), diff.max()
    if a.delays is None or b.delays is None:
        assert a.delays is None and b.delays is None
    else:
        np.testing.assert_array_equal(a.delays, b.delays)
    for key in ("delta", "K", "S", "L_source", "exact_mean", "delay_model"):
        assert a.theory[key] == b.theory[key], key
    for key in ("L", "mu", "f_star", "G", "Delta0", "lr"):
        np.testing.assert_allclose(a.theory[key], b.theory[key], rtol=rtol, atol=0, err_msg=key)
    assert a.objective["d"] == b.objective["d"] and a.objective["n"] == b.objective["n"]
    np.testing.assert_array_equal(a.objective["block_sizes"], b.objective["block_sizes"])


def delay_cases(tmp_dir):
    """(delay model, its keys) for every registered delay model; the table model replays a
    small periodic table"""
    table = os.path.join(tmp_dir, "delays.csv")
    with open(table, "w") as f:
        f.write("\n".join(",".join(str((k + s) % 4) for s in range(4)) for k in range(8)) + "\n")
    cases = []
    for d in stale.components()["delays"]:
        keys = {"delay.name": d["name"]}
        for k in d["keys"]:
            keys[k] = table if k == "delay.path" else DELAY_KEYS[k]
        cases.append(keys)
    return cases


def method_cases(tmp_dir):
    """every registered method, rpd once per registered delay model"""
    cases = []
    for m in stale.components()["methods"]:
        if m["kind"] == "delay model":
            cases += [{"method.name": m["name"], **d} for d in delay_cases(tmp_dir)]
        else:
            cases.append({"method.name": m["name"]})
    return cases


def test_every_registered_method_and_delay_model_runs_a_python_model_as_the_builtin_objective(tmp_path):
    cases = method_cases(tmp_path)
    names = {c["method.name"] for c in cases}
    assert {"rpd", "pipedream", "pipedream-nostash", "paci", "2bw", "pipemare", "localsgd", "gpipe", "1f1b-flush",
            "interleaved", "zb-h1"} <= names
    assert sum(c["method.name"] == "rpd" for c in cases) == len(stale.components()["delays"]) >= 6
    for case in cases:
        builtin = stale.run({**OBJECTIVE, **RUN, **case})
        mine = stale.run({**RUN, **case}, model=least_squares())
        assert mine.status == "ok" and mine.summary["k"] == builtin.summary["k"] > 0, case
        assert mine.config["objective.name"] == "python" and mine.config["objective.stages"] == 4
        assert mine.objective["name"] == "python"
        assert mine.objective["description"].startswith("python model LeastSquaresStages: least squares")
        try:
            assert_runs_close(mine, builtin)
        except AssertionError as e:
            raise AssertionError(f"{case}: {e}") from None


@pytest.mark.parametrize("method", ["rpd", "pipedream", "paci", "localsgd"])
def test_the_numpy_least_squares_model_reproduces_the_quadratic_run_file(tmp_path, method):
    """The oracle of issue 30: the run files, written and read back, agree to RTOL in every
    metric and every iterate."""
    case = {"method.name": method, "method.updates": 200, "log.every": 3}
    if method == "rpd":
        case.update({"delay.name": "uniform", "delay.max": 6})
    builtin = stale.run({**OBJECTIVE, **RUN, **case}, out=tmp_path / "builtin.h5")
    mine = stale.run({**RUN, **case}, model=least_squares(), out=tmp_path / "mine.h5")
    assert mine.path.endswith("mine.h5") and mine.status == "ok"
    assert_runs_close(mine, builtin)
    assert mine.series("subopt")[-1] < 0.5 * mine.series("subopt")[0]  # it optimised


def test_a_model_without_constants_gets_g_the_mean_gradient_and_a_bound_with_L_estimated():
    """No L, μ, f_* (only f_low = 0 for Δ₀): the bound uses the smoothness estimate along the
    run (log.L_estimate = auto), labelled so; for least squares the estimate is a lower bound of
    the true L."""
    case = {**RUN, "method.name": "rpd", "delay.name": "uniform", "delay.max": 4, "method.updates": 120,
            "log.every": 4, "log.exact_mean": False}
    r = stale.run(case, model=least_squares(constants=False))
    exact = stale.objective({**OBJECTIVE, "seed": RUN["seed"]})
    th = r.theory
    assert r.status == "ok"
    assert th["L_source"].startswith("estimated (") and th["bound_uses_estimated_L"] and r.bound_uses_estimated_L
    assert 0 < th["L_estimate"] <= exact["L"] * (1 + 1e-12) and th["L"] == th["L_estimate"]
    assert np.isnan(th["f_star"]) and np.all(np.isnan(r.series("subopt")))
    assert th["G"] > 0 and np.isfinite(r.series("bound")[-1]) and r.series("bound")[-1] > 0
    gm = r.series("grad_norm_sq_mean")
    assert np.all(gm[1:] > 0) and np.isfinite(gm[-1])
    assert "(estimated L=" in repr(r)


class NoConstants(LeastSquaresStages):
    def constants(self):
        return {}


def test_a_model_without_f_star_or_f_low_is_told_once_why_its_bound_is_nan():
    """issue 51, item 5: no f_* and no f_low leaves Δ₀ unknown, so the bound is NaN; the run warns
    once, naming the fix, and its line shows f (not "f-f*=nan"); a model with f_low gets neither"""
    case = {**RUN, "method.name": "rpd", "delay.name": "uniform", "delay.max": 4, "method.updates": 40}
    with pytest.warns(UserWarning, match=r"neither f_star nor f_low.*constants=\{'f_low': 0.0\}") as w:
        r = stale.run(case, model=NoConstants({**OBJECTIVE, "seed": RUN["seed"]}))
    assert len(w) == 1 and np.isnan(r.series("bound")[-1])
    text = repr(r)
    assert "f-f*=" not in text and f"f={r.series('loss')[-1]:.6e}" in text and "give the model constants=" in text
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        told = stale.run(case, model=least_squares(constants=False))  # f_low = 0 only
    assert np.isfinite(told.series("bound")[-1]) and "give the model constants" not in repr(told)


class Crash(RuntimeError):
    pass


class CrashingLeastSquares(LeastSquaresStages):
    """fails (as a killed process would stop) at its `at`-th stage forward pass"""

    def __init__(self, at, **kw):
        super().__init__({**OBJECTIVE, "seed": RUN["seed"]}, **kw)
        self.at, self.calls = at, 0

    def forward(self, s, m, x, w_s):
        self.calls += 1
        if self.calls == self.at:
            raise Crash("stopped")
        return super().forward(s, m, x, w_s)


@pytest.mark.parametrize("method", ["rpd", "pipedream"])
def test_a_run_resumed_from_its_checkpoint_equals_the_uninterrupted_run(tmp_path, method):
    case = {**RUN, "method.name": method, "method.updates": 96, "log.flush_seconds": 0.0, "log.exact_mean": False,
            "log.every": 2}
    if method == "rpd":
        case.update({"delay.name": "uniform", "delay.max": 5})
    whole = stale.run(case, model=least_squares(), out=tmp_path / "whole.h5")
    out = tmp_path / "cut.h5"
    with pytest.raises(Crash):
        stale.run(case, model=CrashingLeastSquares(at=900), out=out)
    partial = str(out) + ".partial"
    assert os.path.exists(partial) and not os.path.exists(out)
    with pytest.raises(stale.ConfigError, match="pass the same model= to resume it"):
        stale.run(resume=partial)
    resumed = stale.run(resume=partial, model=least_squares())
    assert resumed.path == str(out) and os.path.exists(out)
    assert_runs_close(resumed, whole, rtol=0)  # bit for bit


class Unprinted(CrashingLeastSquares):
    """no fingerprint(): the driver hashes every batch's input(m), here shifted by `shift`"""

    fingerprint = None

    def __init__(self, at=0, shift=0.0):
        super().__init__(at)
        self.shift = shift

    def input(self, m):
        return super().input(m) + self.shift


def test_a_resume_finds_the_models_data_through_its_fingerprint_or_its_inputs(tmp_path):
    """the run file records a checksum of the model's data (its fingerprint(), else its
    inputs): a resume with other data is refused in one line and leaves the .partial as it was"""
    case = {**RUN, "method.name": "pipedream", "method.updates": 96, "log.flush_seconds": 0.0, "log.every": 2}
    refused = "the model's data or stages changed since the checkpoint"
    # stale.least_squares's fingerprint covers X and y: other labels are another model
    whole = stale.run(case, model=least_squares(), out=tmp_path / "whole.h5")
    with pytest.raises(Crash):
        stale.run(case, model=CrashingLeastSquares(at=900), out=tmp_path / "a.h5")
    relabelled = least_squares()
    relabelled.y = relabelled.y + 1.0
    with pytest.raises(stale.ConfigError, match=refused):
        stale.run(resume=str(tmp_path / "a.h5.partial"), model=relabelled)
    assert_runs_close(stale.run(resume=str(tmp_path / "a.h5.partial"), model=least_squares()), whole, rtol=0)
    # without one, every batch's input(m)
    with pytest.raises(Crash):
        stale.run(case, model=Unprinted(at=900), out=tmp_path / "b.h5")
    with pytest.raises(stale.ConfigError, match=refused):
        stale.run(resume=str(tmp_path / "b.h5.partial"), model=Unprinted(shift=1e-9))
    assert stale.run(resume=str(tmp_path / "b.h5.partial"), model=Unprinted()).status == "ok"
    # the checksum is made only where a run file is written (hashing costs 0.16 s per 188 MB)
    counted, calls = least_squares(), []
    counted.fingerprint = lambda: calls.append(1) or [counted.X, counted.y]
    stale.run(case, model=counted)
    assert calls == []
    stale.run(case, model=counted, out=tmp_path / "c.h5")
    assert calls == [1]


class Tracing(LeastSquaresStages):
    """records whether each forward's input, the loss's input and each backward's output
    gradient is the very object the call before it returned (and so does each stage's in-place
    damage to its input)"""

    def __init__(self, keeps: bool, **kw):
        super().__init__({**OBJECTIVE, "seed": RUN["seed"]}, **kw)
        self._keeps_activations = keeps
        self.returned, self.alive, self.same = set(), [], []

    def _seen(self, x):
        self.same.append(id(x) in self.returned)

    def _returns(self, a):
        self.returned.add(id(a))
        self.alive.append(a)  # kept alive: no later array reuses its id

    def input(self, m):
        a = super().input(m)
        self._returns(a)
        return a

    def forward(self, s, m, x, w_s):
        self._seen(x)
        out, cache = super().forward(s, m, x, w_s)
        self._returns(out)
        return out, cache

    def loss(self, m, last):
        self._seen(last)
        f, g = super().loss(m, last)
        self._returns(g)
        return f, g

    def backward(self, s, m, grad_out, w_s, cache):
        self._seen(grad_out)
        g_w, g_in = super().backward(s, m, grad_out, w_s, cache)
        g_in = g_in.copy()  # its own object (least squares passes grad_out through)
        self._returns(g_in)
        return g_w, g_in


@pytest.mark.parametrize("method", ["pipedream", "paci", "rpd"])
def test_a_model_that_keeps_its_activations_gets_its_own_objects_back_and_the_same_run(tmp_path, method):
    """stale.torch's protocol (python/stage_model_objective.hpp): a model with
    _keeps_activations gets each forward activation and each activation gradient back as the
    object it returned, held by the harness between calls; any other model gets float64 copies.
    The run is the same bit for bit, and a run cut mid-flight resumes bit for bit (held
    activations are recomputed; the gradients in flight come from the checkpoint)."""
    case = {**RUN, "method.name": method, "method.updates": 96, "log.every": 2, "log.exact_mean": False,
            "log.flush_seconds": 0.0}
    if method == "rpd":
        case.update({"delay.name": "uniform", "delay.max": 5})
    copied, kept = Tracing(keeps=False), Tracing(keeps=True)
    a = stale.run(case, model=copied, out=tmp_path / "copied.h5")
    b = stale.run(case, model=kept, out=tmp_path / "kept.h5")
    assert_runs_close(b, a, rtol=0)
    assert all(kept.same) and len(kept.same) > 1000
    assert not any(copied.same) and len(copied.same) == len(kept.same)
    cut = KeptCrashing(at=700)
    with pytest.raises(Crash):
        stale.run(case, model=cut, out=tmp_path / "cut.h5")
    resumed = stale.run(resume=str(tmp_path / "cut.h5") + ".partial", model=Tracing(keeps=True))
    assert_runs_close(resumed, a, rtol=0)


class KeptCrashing(Tracing):
    def __init__(self, at):
        super().__init__(keeps=True)
        self.calls, self.at = 0, at

    def forward(self, s, m, x, w_s):
        self.calls += 1
        if self.calls == self.at:
            raise Crash("stopped")
        return super().forward(s, m, x, w_s)


class ReshapingLeastSquares(LeastSquaresStages):
    """stage 1's output gains a column at the n-th call"""

    def __init__(self, at):
        super().__init__({**OBJECTIVE, "seed": RUN["seed"]})
        self.at, self.calls = at, 0

    def forward(self, s, m, x, w_s):
        out, cache = super().forward(s, m, x, w_s)
        if s == 1:
            self.calls += 1
            if self.calls >= self.at:
                out = np.stack([out, out], axis=1)
        return out, cache


class LossAt(LeastSquaresStages):
    """the loss becomes `value` at its n-th call"""

    def __init__(self, at, value):
        super().__init__({**OBJECTIVE, "seed": RUN["seed"]})
        self.at, self.value, self.calls = at, value, 0

    def loss(self, m, last):
        self.calls += 1
        f, g = super().loss(m, last)
        return (self.value, g) if self.calls >= self.at else (f, g)


class Returning(LeastSquaresStages):
    """returns what `bad(kind, value)` makes of one of its results: the stage outputs
    (`forward`), parameter gradients (`backward`) or losses (`loss`)"""

    def __init__(self, kind, bad):
        super().__init__({**OBJECTIVE, "seed": RUN["seed"]})
        self.kind, self.bad = kind, bad

    def forward(self, s, m, x, w_s):
        out, cache = super().forward(s, m, x, w_s)
        return (self.bad(out), cache) if self.kind == "forward" else (out, cache)

    def backward(self, s, m, grad_out, w_s, cache):
        g_w, g_in = super().backward(s, m, grad_out, w_s, cache)
        return (self.bad(g_w), g_in) if self.kind == "backward" else (g_w, g_in)

    def loss(self, m, last):
        f, g = super().loss(m, last)
        return (self.bad(f), g) if self.kind == "loss" else (f, g)


def one_line_error(fn, match, tmp_path):
    """fn() raises a one-line stale.ConfigError matching `match` and leaves tmp_path empty"""
    with pytest.raises(stale.ConfigError, match=match) as e:
        fn()
    assert "\n" not in str(e.value)
    assert list(tmp_path.iterdir()) == []
    return str(e.value)


def test_bad_models_are_one_line_config_errors_that_write_nothing(tmp_path):
    out = tmp_path / "run.h5"
    run = {**RUN, "method.name": "pipedream"}
    # a stage whose output changes shape: at its first call after the probe, and later in the run
    one_line_error(lambda: stale.run(run, model=ReshapingLeastSquares(at=2), out=out),
                   r"stage 1's output has shape \(5, 2\) for batch 0, earlier \(rows, \)", tmp_path)
    msg = one_line_error(lambda: stale.run(run, model=ReshapingLeastSquares(at=30), out=out),
                         r"stage 1's output has shape \(5, 2\) for batch \d+, earlier", tmp_path)
    assert "must keep its shape between calls" in msg
    # a loss that is not finite where the run starts
    one_line_error(lambda: stale.run(run, model=LossAt(1, float("nan")), out=out),
                   "loss of batch 0 at the initial point is nan", tmp_path)
    # results of the wrong kind: complex activations (numpy would drop the imaginary part with a
    # warning), a None gradient (was "returned 1 parameter gradients"), a loss that is no number
    # (was numpy's ValueError)
    one_line_error(lambda: stale.run(run, model=Returning("forward", lambda a: a.astype(complex)), out=out),
                   r"stage 0's output has dtype complex128; return real numbers", tmp_path)
    one_line_error(lambda: stale.run(run, model=Returning("backward", lambda g: None), out=out),
                   r"backward of stage 3 returned None for its parameter gradient; return the gradient of its 4 "
                   r"parameters", tmp_path)
    one_line_error(lambda: stale.run(run, model=Returning("loss", lambda f: "low"), out=out),
                   r"loss\(0, last\) returned a loss of type str; return a float", tmp_path)
    # data that cannot be partitioned: an empty batch
    empty = least_squares()
    empty.batch_rows = lambda m: 0 if m == 3 else 5
    one_line_error(lambda: stale.run(run, model=empty, out=out), r"batch_rows\(3\) = 0: the data cannot be partitioned",
                   tmp_path)
    with pytest.raises(stale.ConfigError, match="batch_size = 50 exceeds the 40 samples"):
        stale.batch_offsets(40, 50)
    # keys the model decides
    one_line_error(lambda: stale.run({**run, "objective.stages": 8}, model=least_squares(), out=out),
                   "objective.stages: 8 but the model has 4 stages", tmp_path)
    one_line_error(lambda: stale.run({**run, "objective.batch_size": 5}, model=least_squares(), out=out),
                   "objective.batch_size: a model defined in Python brings its own batches", tmp_path)
    one_line_error(lambda: stale.run({**run, "objective.dim": 16}, model=least_squares(), out=out),
                   r"objective\.dim", tmp_path)  # the unread-key rule: the Python model reads no objective.dim
    one_line_error(lambda: stale.run(run, out=out, **{"objective.name": "python"}),
                   r"stale\.run\(config, model=\.\.\.\)", tmp_path)
    # a gradient of the wrong size
    wrong = least_squares()
    wrong.backward = lambda s, m, g, w, c: (np.zeros(3), g)
    one_line_error(lambda: stale.run(run, model=wrong, out=out), "backward of stage 3 returned 3 parameter gradients; "
                   "the stage has 4 parameters", tmp_path)


def test_a_loss_that_becomes_non_finite_during_the_run_is_a_diverged_run_recorded(tmp_path):
    """Not an error: the run file is written with status diverged (log.divergence), like any
    diverged run of the harness."""
    r = stale.run({**RUN, "method.name": "pipedream"}, model=LossAt(200, float("inf")), out=tmp_path / "d.h5")
    assert r.status == "diverged" and "non-finite" in r.message and os.path.exists(tmp_path / "d.h5")
    big = stale.run({**RUN, "method.name": "rpd", "method.lr": 3.0}, model=least_squares())
    assert big.status == "diverged" and "exceeded log.divergence" in big.message


def test_the_model_sees_read_only_views_and_its_seed():
    seen = {}

    class Probe(LeastSquaresStages):
        def start(self, seed):
            seen["seed"] = seed

        def forward(self, s, m, x, w_s):
            seen["writeable"] = w_s.flags.writeable
            seen["x"] = (x.dtype, x.flags.c_contiguous)
            with pytest.raises(ValueError):
                w_s[0] = 1.0
            return super().forward(s, m, x, w_s)

    r = stale.run({**RUN, "method.name": "paci", "seed": 11, "method.updates": 8}, model=Probe({**OBJECTIVE, "seed": 11}))
    assert r.status == "ok" and seen["seed"] == 11 and seen["writeable"] is False
    assert seen["x"][0] == np.float64 and seen["x"][1]


def test_a_model_need_not_subclass_stage_model():
    """duck typing: any object with the StageModel calls runs, named by its class"""

    class Plain:
        def __init__(self):
            self.inner = least_squares()
            self.stages, self.num_batches = self.inner.stages, self.inner.num_batches

        def __getattr__(self, name):  # the calls and the description, not the name
            if name in ("initial_params", "batch_rows", "input", "forward", "backward", "loss", "constants", "description"):
                return getattr(self.inner, name)
            raise AttributeError(name)

    a = stale.run({**RUN, "method.name": "paci"}, model=Plain())
    b = stale.run({**RUN, "method.name": "paci"}, model=least_squares())
    assert a.objective["description"] == "python model Plain: least squares (1/2n)||Xw - y||^2 as S linear stages"
    assert_runs_close(a, b, rtol=0)
