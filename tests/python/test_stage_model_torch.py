"""stale.torch: PyTorch modules as a stage model. The float64 least-squares stages, differentiated
by autograd, reproduce the built-in `quadratic` objective's run files like the NumPy oracle
(test_stage_model.py) does; float32 agrees to a stated tolerance; dropout streams are seeded by
(seed, stage, batch), so a run repeats bit for bit and resumes bit for bit; bad modules and data
are one-line stale.ConfigErrors. Reported skipped without torch (scripts/setup.sh installs it)."""
from __future__ import annotations

import os

import numpy as np
import pytest

# most models here have no f_* or f_low: the run says once that its bound is NaN (tested in
# test_stage_model.py); not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore:.*neither f_star nor f_low:UserWarning")

stale = pytest.importorskip("stale", reason="the Python package is not installed (pip install .)")
torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'stale[torch]')")
import stale.torch as st  # noqa: E402

from test_stage_model import OBJECTIVE, RUN, assert_runs_close, method_cases  # noqa: E402

# one intra-op thread: these ops are tiny, and on a loaded machine two threads' barriers made
# each of them 30 times slower (4 ms against 0.13 ms for a cross-entropy of 8 × 3)
torch.set_num_threads(1)
SEEDED = {**OBJECTIVE, "seed": RUN["seed"]}  # the built-in objective's data, drawn from the run's seed

# float32 stages against the float64 built-in objective: each op rounds to 2^-24 ≈ 6e-8
# relative, and 64 updates of a contraction keep that within this relative tolerance
RTOL_FLOAT32 = 1e-4
# on a CUDA device the model's tensors live there and cuBLAS sums in its own order: the same
# tolerances hold (reported skipped where torch sees no CUDA device, as in CI)
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]


def test_every_registered_method_runs_torch_stages_as_the_builtin_objective(tmp_path):
    for case in method_cases(tmp_path):
        case = {**case, "method.updates": 32, "log.every": 4, "log.exact_mean": False}
        builtin = stale.run({**OBJECTIVE, **RUN, **case})
        mine = stale.run({**RUN, **case}, model=st.least_squares_stages(SEEDED))
        try:
            assert_runs_close(mine, builtin)
        except AssertionError as e:
            raise AssertionError(f"{case}: {e}") from None


@pytest.mark.parametrize("method", ["rpd", "pipedream", "paci", "localsgd"])
def test_float64_torch_least_squares_reproduces_the_quadratic_run_file(tmp_path, method):
    case = {"method.name": method, "method.updates": 200, "log.every": 3}
    if method == "rpd":
        case.update({"delay.name": "uniform", "delay.max": 6})
    builtin = stale.run({**OBJECTIVE, **RUN, **case}, out=tmp_path / "builtin.h5")
    mine = stale.run({**RUN, **case}, model=st.least_squares_stages(SEEDED), out=tmp_path / "torch.h5")
    assert mine.objective["description"].startswith("python model TorchLeastSquares")
    assert_runs_close(mine, builtin)


@pytest.mark.parametrize("device", DEVICES)
def test_float32_torch_least_squares_follows_the_quadratic_within_float32_rounding(device):
    case = {**RUN, "method.name": "pipedream", "log.every": 4}
    builtin = stale.run({**OBJECTIVE, **case})
    mine = stale.run(case, model=st.least_squares_stages(SEEDED, dtype=torch.float32, device=device))
    assert mine.status == "ok"
    for name in ("loss", "grad_norm_sq", "batch_loss"):
        np.testing.assert_allclose(mine.series(name), builtin.series(name), rtol=RTOL_FLOAT32, err_msg=name)
    np.testing.assert_allclose(mine.iterates, builtin.iterates, rtol=0, atol=RTOL_FLOAT32 * np.abs(builtin.iterates).max())
    # and it is float32: not equal to the float64 run
    assert not np.array_equal(mine.series("loss"), builtin.series("loss"))


def mlp(dropout=0.0, seed=0):
    torch.manual_seed(seed)
    L = torch.nn.Linear
    return torch.nn.Sequential(torch.nn.Sequential(L(6, 12), torch.nn.Tanh(), torch.nn.Dropout(dropout)),
                               torch.nn.Sequential(L(12, 12), torch.nn.Tanh()), L(12, 3))


def data(n=48, seed=1):
    g = np.random.default_rng(seed)
    X = g.standard_normal((n, 6))
    return X, (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0)


def classifier(dropout=0.0, dtype=torch.float64, **kw):
    return st.TorchStages(mlp(dropout), data(), torch.nn.functional.cross_entropy, batch_size=8, dtype=dtype, **kw)


def test_the_modules_own_parameters_are_the_initial_point_and_are_not_touched():
    net = mlp()
    before = [p.detach().clone() for p in net.parameters()]
    model = st.TorchStages(net, data(), torch.nn.functional.cross_entropy, batch_size=8)
    r = stale.run({**RUN, "method.name": "1f1b-flush", "method.updates": 48, "log.every": 8}, model=model)
    flat = np.concatenate([p.detach().numpy().ravel() for p in before])
    np.testing.assert_array_equal(r.iterates[0], flat)
    for p, q in zip(net.parameters(), before):
        assert torch.equal(p.detach(), q)
    assert r.status == "ok" and r.series("loss")[-1] < r.series("loss")[0]
    # the adapter trains copies: the float32 modules handed over stay float32 beside a float64 run
    assert all(p.dtype == q.dtype == torch.float32 for p, q in zip(net.parameters(), before))
    # a second run of one model starts from the modules' point again, not where the first ended
    again = stale.run({**RUN, "method.name": "1f1b-flush", "method.updates": 48, "log.every": 8}, model=model)
    np.testing.assert_array_equal(again.iterates[-1], r.iterates[-1])


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_streams_repeat_a_run_bit_for_bit_and_follow_the_seed(device):
    case = {**RUN, "method.name": "pipedream", "method.updates": 48, "log.every": 4, "log.exact_mean": False}
    a = stale.run(case, model=classifier(0.3, device=device))
    b = stale.run(case, model=classifier(0.3, device=device))
    np.testing.assert_array_equal(a.iterates, b.iterates)
    np.testing.assert_array_equal(a.series("loss"), b.series("loss"))
    c = stale.run({**case, "seed": 4}, model=classifier(0.3, device=device))
    assert not np.array_equal(a.iterates[-1], c.iterates[-1])
    # without dropout the seed changes nothing (the initial point is the modules')
    d0 = stale.run(case, model=classifier(0.0, device=device))
    d1 = stale.run({**case, "seed": 4}, model=classifier(0.0, device=device))
    np.testing.assert_array_equal(d0.iterates, d1.iterates)
    # the user's global stream (the device's generator too) is left as it was
    model = classifier(0.3, device=device)  # (mlp() seeds the global stream itself)
    torch.manual_seed(123)
    expected = torch.rand(3, device=device)
    torch.manual_seed(123)
    stale.run(case, model=model)
    assert torch.equal(torch.rand(3, device=device), expected)


class Crash(RuntimeError):
    pass


def _cut(model, case, out, at=150):
    """a run of `model` stopped by an exception at its `at`-th forward call: its .partial stays"""
    forward, calls = model.forward, {"n": 0}

    def crashing(s, m, x, w_s, **kw):  # kw: pinned=True, where the harness promises w_s stays put
        calls["n"] += 1
        if calls["n"] == at:
            raise Crash("stopped")
        return forward(s, m, x, w_s, **kw)

    model.forward = crashing
    with pytest.raises(Crash):
        stale.run(case, model=model, out=out)
    return str(out) + ".partial"


@pytest.mark.parametrize("device", DEVICES)
def test_a_dropout_run_resumed_from_its_checkpoint_equals_the_uninterrupted_run(tmp_path, device):
    case = {**RUN, "method.name": "paci", "method.updates": 64, "log.every": 4, "log.exact_mean": False,
            "log.flush_seconds": 0.0}
    whole = stale.run(case, model=classifier(0.3, device=device), out=tmp_path / "whole.h5")
    partial = _cut(classifier(0.3, device=device), case, tmp_path / "cut.h5", at=200)
    resumed = stale.run(resume=partial, model=classifier(0.3, device=device))
    assert_runs_close(resumed, whole, rtol=0)


def test_float32_mlp_runs_and_its_val_loss_is_logged():
    Xv, yv = data(16, seed=9)
    model = classifier(dtype=torch.float32, validation=(Xv, yv), name="mlp", description="tanh MLP")
    r = stale.run({**RUN, "method.name": "paci", "method.updates": 64, "log.every": 8}, model=model)
    # the description says what computed the run: torch's version, the dtype, the kernels' instruction set
    assert r.status == "ok" and r.objective["description"] == (
        f"python model mlp: tanh MLP [torch {torch.__version__}, float32 on cpu, "
        f"{torch.backends.cpu.get_cpu_capability()} kernels" + (f", MKL_CBWR={os.environ['MKL_CBWR']}" if os.environ.get("MKL_CBWR") else "")
        + ", 1 intra-op thread]")
    v = r.series("val_loss")
    assert np.all(np.isfinite(v)) and v[-1] < v[0]


def test_bad_modules_and_data_are_one_line_config_errors(tmp_path):
    net = mlp()
    net[1][0].weight.requires_grad_(False)
    with pytest.raises(stale.ConfigError, match=r"stage 1's parameter '0\.weight' does not require grad") as e:
        st.TorchStages(net, data(), torch.nn.functional.cross_entropy, batch_size=8)
    assert "\n" not in str(e.value)
    with pytest.raises(stale.ConfigError, match="batch_size = 64 exceeds the 48 samples"):
        st.TorchStages(mlp(), data(), torch.nn.functional.cross_entropy, batch_size=64)
    X, y = data()
    with pytest.raises(stale.ConfigError, match="X has 48 rows, y has 47"):
        st.TorchStages(mlp(), (X, y[:-1]), torch.nn.functional.cross_entropy, batch_size=8)
    with pytest.raises(stale.ConfigError, match=r"stage 1 \(Tanh\) has no parameters"):
        st.TorchStages([torch.nn.Linear(6, 3), torch.nn.Tanh()], data(), torch.nn.functional.cross_entropy, batch_size=8)
    shared = torch.nn.Linear(6, 6)  # one parameter in two stages: two blocks of w cannot be one tensor
    with pytest.raises(stale.ConfigError, match=r"stage 1's parameter 'weight' is also a parameter of stage 0") as e:
        st.TorchStages([shared, shared, torch.nn.Linear(6, 3)], data(), torch.nn.functional.cross_entropy, batch_size=8)
    assert "\n" not in str(e.value)

    class Growing(torch.nn.Module):  # its output widens after a few calls
        def __init__(self):
            super().__init__()
            self.lin, self.calls = torch.nn.Linear(6, 3), 0

        def forward(self, x):
            self.calls += 1
            out = self.lin(x)
            return torch.cat([out, out], 1) if self.calls > 20 else out

    model = st.TorchStages([Growing(), torch.nn.Linear(3, 3)], data(), lambda o, y: torch.nn.functional.cross_entropy(o[:, :3], y),
                           batch_size=8)
    with pytest.raises(stale.ConfigError, match=r"stage 0's output has shape \(8, 6\) for batch \d+, earlier \(rows, 3\)"):
        stale.run({**RUN, "method.name": "gpipe"}, model=model, out=tmp_path / "x.h5")
    assert list(tmp_path.iterdir()) == []


@CUDA
@pytest.mark.parametrize("method", ["rpd", "pipedream", "paci", "localsgd"])
def test_cuda_float64_torch_least_squares_reproduces_the_quadratic_run(method):
    case = {**RUN, "method.name": method, "log.every": 4}
    if method == "rpd":
        case.update({"delay.name": "uniform", "delay.max": 6})
    builtin = stale.run({**OBJECTIVE, **case})
    # cuBLAS sums in its own order: rounding only, as on the CPU
    assert_runs_close(stale.run(case, model=st.least_squares_stages(SEEDED, device="cuda")), builtin, rtol=1e-10)


class LinearChain(stale.StageModel):
    """x ← x W_sᵀ per stage, loss ½‖x − Y‖² per row, with hand-written backward passes that use
    the weights the harness passes to backward (not the forward's): the oracle of the adapter's
    no-stash semantics, which least squares cannot check (its backward does not read w_s)"""

    def __init__(self, weights, X, Y, batch_size):
        self.w0 = [W.detach().double().numpy().copy() for W in weights]
        self.shapes = [W.shape for W in self.w0]
        self.X, self.Y = X, Y
        self.offsets = stale.batch_offsets(len(X), batch_size)
        self.stages, self.num_batches = len(weights), len(self.offsets) - 1

    def initial_params(self, seed):
        return [W.ravel() for W in self.w0]

    def batch_rows(self, m):
        return int(self.offsets[m + 1] - self.offsets[m])

    def input(self, m):
        return self.X[self.offsets[m]:self.offsets[m + 1]]

    def forward(self, s, m, x, w_s):
        return x @ w_s.reshape(self.shapes[s]).T, x.copy()

    def backward(self, s, m, grad_out, w_s, x):
        return grad_out.T @ x, grad_out @ w_s.reshape(self.shapes[s])

    def loss(self, m, last):
        r = last - self.Y[self.offsets[m]:self.offsets[m + 1]]
        return 0.5 * float((r * r).sum()) / len(r), r / len(r)


def test_torch_backward_uses_the_weights_of_the_backward_pass_as_the_numpy_oracle():
    torch.manual_seed(5)
    layers = [torch.nn.Linear(6, 5, bias=False), torch.nn.Linear(5, 4, bias=False), torch.nn.Linear(4, 3, bias=False)]
    g = np.random.default_rng(2)
    X, Y = g.standard_normal((48, 6)), g.standard_normal((48, 3))
    oracle = LinearChain([l.weight for l in layers], X, Y, batch_size=8)
    loss = lambda o, y: 0.5 * ((o - y) ** 2).sum() / o.shape[0]  # noqa: E731
    case = {**RUN, "method.lr": 0.1, "method.updates": 96, "log.every": 4}
    finals = {}
    for method in ("pipedream", "pipedream-nostash", "paci", "pipemare"):
        mine = stale.run({**case, "method.name": method}, model=st.TorchStages(layers, (X, Y), loss, batch_size=8))
        ref = stale.run({**case, "method.name": method}, model=oracle)
        assert_runs_close(mine, ref)
        finals[method] = mine.iterates[-1]
    # and the weights of the backward pass matter here: without stashing the run is another one
    assert np.linalg.norm(finals["pipedream-nostash"] - finals["pipedream"]) > 1e-6 * np.linalg.norm(finals["pipedream"])


@pytest.fixture
def pin_every_stage(monkeypatch):
    """the adapter views w_s at every pinned forward, whatever a stage's size (the tests' stages
    are below the size where it would by itself)"""
    monkeypatch.setattr(st.TorchStages, "_PIN_MIN", 1)


def _count_pins(model):
    """counts the model's pinned and copying forwards, its weight loads, and its backwards that
    wrote their gradient into the harness's storage"""
    counts = {"pinned": 0, "copied": 0, "loads": 0, "written": 0, "backwards": 0}
    forward, load, backward = model.forward, model._load, model.backward

    def counting_forward(s, m, x, w_s, pinned=False):
        counts["pinned" if pinned else "copied"] += 1
        return forward(s, m, x, w_s, pinned=pinned)

    def counting_load(s, w_s):
        counts["loads"] += 1
        return load(s, w_s)

    def counting_backward(s, m, grad_out, w_s, cache, **kw):
        g_w, g_in = backward(s, m, grad_out, w_s, cache, **kw)
        counts["backwards"] += 1
        counts["written"] += kw.get("into") is not None and g_w is kw["into"]
        return g_w, g_in

    model.forward, model._load, model.backward = counting_forward, counting_load, counting_backward
    return counts


def test_pinned_views_give_every_method_the_runs_of_copied_weights_bit_for_bit(tmp_path, pin_every_stage):
    """A float64 model on the CPU views the harness's weights at each forward the harness pins
    (stage_forward_pinned: the backward reads the same memory) instead of copying them in, and
    writes each parameter gradient into the harness's storage instead of handing a vector back.
    Every method's run, through schedules, weight stashes, the live weights of methods without
    stashing and PipeMare's predictions (which are not pinned), equals the run that copies both
    ways (as a GPU model runs), bit for bit; the views and the writes are used, and the
    parameters point back at the adapter's own tensor."""
    X, y = data()
    # blocks of 112, 272, 272 and 51 parameters: each starts on a multiple of 64 bytes, so every
    # single-point forward is pinned whatever the build's vector alignment (16, 32 or 64 bytes)
    net = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(6 if i == 0 else 16, 16), torch.nn.Tanh())
                                for i in range(3)], torch.nn.Linear(16, 3))
    for case in method_cases(tmp_path):
        case = {**RUN, **case, "method.lr": 0.2, "method.updates": 48, "log.every": 4}
        runs = []
        for pins in (False, True):
            model = st.TorchStages(net, (X, y), torch.nn.functional.cross_entropy, batch_size=8)
            model._pinned_views = model._writes_gradients = pins
            counts = _count_pins(model)
            runs.append(stale.run(case, model=model))
            if pins:
                # the probe's 4 forwards copy, and PipeMare's predicted weights are not where its backward reads
                assert counts["pinned"] > 48 and (counts["copied"] == 4 or case["method.name"] == "pipemare"), (case, counts)
                assert counts["loads"] == 2 * counts["copied"], (case, counts)
                # the probe's backwards hand their gradients back (the driver checks them); every other writes in place
                assert counts["written"] == counts["backwards"] - 4 > 48, (case, counts)
                for s, params in enumerate(model._params):
                    base = model._flat[s].untyped_storage().data_ptr()
                    assert all(p.untyped_storage().data_ptr() == base for p in params), case
            else:
                assert counts["pinned"] == counts["written"] == 0, case
        try:
            assert_runs_close(runs[1], runs[0], rtol=0)
        except AssertionError as e:
            raise AssertionError(f"{case}: {e}") from None


def test_pinned_views_reproduce_the_builtin_objective_and_the_weights_of_the_backward_pass(pin_every_stage):
    """With every stage viewing its weights: the float64 torch least squares reproduces the
    built-in quadratic (rpd, PipeDream with and without stashing, 1F1B-flush), and a method
    without stashing still differentiates with the weights of the backward pass (the NumPy oracle)"""
    for method in ("rpd", "pipedream", "pipedream-nostash", "1f1b-flush"):
        case = {**RUN, "method.name": method, "method.updates": 96, "log.every": 3}
        builtin = stale.run({**OBJECTIVE, **case})
        model = st.least_squares_stages(SEEDED)
        counts = _count_pins(model)
        assert_runs_close(stale.run(case, model=model), builtin)
        assert counts["pinned"] > 96, (method, counts)
    torch.manual_seed(5)
    layers = [torch.nn.Linear(6, 5, bias=False), torch.nn.Linear(5, 4, bias=False), torch.nn.Linear(4, 3, bias=False)]
    g = np.random.default_rng(2)
    X, Y = g.standard_normal((48, 6)), g.standard_normal((48, 3))
    loss = lambda o, y: 0.5 * ((o - y) ** 2).sum() / o.shape[0]  # noqa: E731
    case = {**RUN, "method.name": "pipedream-nostash", "method.lr": 0.1, "method.updates": 96, "log.every": 4}
    assert_runs_close(stale.run(case, model=st.TorchStages(layers, (X, Y), loss, batch_size=8)),
                      stale.run(case, model=LinearChain([l.weight for l in layers], X, Y, batch_size=8)))


def test_a_pinned_run_resumed_from_its_checkpoint_equals_the_uninterrupted_run(tmp_path, pin_every_stage):
    """a resumed run recomputes its micro-batches in flight from the stashed weights, which are
    not where a method without stashing reads at the backward: those forwards copy (not pinned),
    and the run resumes bit for bit"""
    for method in ("pipedream-nostash", "pipedream"):
        case = {**RUN, "method.name": method, "method.updates": 64, "log.every": 4, "log.flush_seconds": 0.0}
        whole = stale.run(case, model=classifier(), out=tmp_path / f"{method}.h5")
        partial = _cut(classifier(), case, tmp_path / f"{method}-cut.h5", at=200)
        assert_runs_close(stale.run(resume=partial, model=classifier()), whole, rtol=0)


def test_a_backward_at_another_address_than_its_pinned_forward_is_an_error(pin_every_stage):
    model = classifier()
    w = model.initial_params(0)
    x = torch.as_tensor(data()[0][:8])
    out, cache = model.forward(0, 0, x, w[0], pinned=True)
    with pytest.raises(RuntimeError, match="stage 0's backward got its weights at another address"):
        model.backward(0, 0, torch.ones_like(out), w[0].copy(), cache)
    model.backward(0, 0, torch.ones_like(out), w[0], cache)  # the same array: no load, no error


def _digest_script():
    """scripts/torch_run_digest.py as a module (its model, its run)"""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "torch_run_digest.py"
    spec = importlib.util.spec_from_file_location("torch_run_digest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_torch_run_takes_its_thread_count_from_the_model_not_the_caller(dtype, threads):
    """stale.torch's guarantee (README "Reproducibility"): every call of a run computes with the
    model's `threads` intra-op threads, whatever the calling process set, and the caller's
    setting is back afterwards; so the run's bits do not follow the process's thread count. The
    model centres each activation by its mean over 2^18 values, a reduction torch's kernels split
    by thread count (on this project's AVX-512 machines 1, 2 and 3 threads give three different
    float32 sums): a run that took the caller's count would differ here, not only on some CPU."""
    digest = _digest_script()
    model = digest.digest_model(dtype, threads)
    assert f"{threads} intra-op thread" in model.description
    before = torch.get_num_threads()
    runs = {}
    try:
        for ambient in (1, 2, 3):
            torch.set_num_threads(ambient)
            runs[ambient] = digest.digest_run(model)
            assert torch.get_num_threads() == ambient  # the caller's setting given back
    finally:
        torch.set_num_threads(before)
    for ambient, (_, _, seen) in runs.items():
        assert seen == [threads], (ambient, seen)  # every stage call ran at the model's count
    assert len({(d, last) for d, last, _ in runs.values()}) == 1, runs


def test_the_thread_guarantee_holds_under_each_instruction_set_torch_can_pick_here():
    """the same guarantee with torch's kernels forced to AVX2 and, where the CPU has it, AVX-512
    (ATEN_CPU_CAPABILITY, read when torch loads: one process each), through the digest script
    the README names: one digest for process settings of 1, 2 and 3 threads"""
    import subprocess
    import sys
    from pathlib import Path

    here = torch.backends.cpu.get_cpu_capability()  # what torch picked for this CPU
    caps = {"AVX2": ["avx2"], "AVX512": ["avx2", "avx512"]}.get(here)
    if caps is None:
        pytest.skip(f"torch picks {here} kernels here: no AVX2 to force")
    script = Path(__file__).resolve().parents[2] / "scripts" / "torch_run_digest.py"
    for cap in caps:
        out = subprocess.run([sys.executable, str(script), "--ambient", "1,2,3"], capture_output=True, text=True,
                             check=True, timeout=600, env={**os.environ, "ATEN_CPU_CAPABILITY": cap}).stdout
        lines = out.strip().splitlines()
        assert len(lines) == 3 and all(f"{cap.upper()} kernels" in line for line in lines), out
        assert all("stages saw [1]" in line for line in lines), out
        assert len({line.split("digest ")[1] for line in lines}) == 1, out


class _Counter(torch.nn.Module):
    """a stage that counts its calls in a buffer: state outside w"""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(6, 3)
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        self.calls += 1
        return self.lin(x)


def test_a_buffer_a_forward_pass_changes_is_refused_and_constant_buffers_run(tmp_path):
    X, y = data()

    def with_norm(norm):
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(6, 12), norm, torch.nn.Tanh()), torch.nn.Linear(12, 3))

    for stages, match in ((with_norm(torch.nn.BatchNorm1d(12)), r"stage 0's buffer '1\.running_mean' \(BatchNorm1d\) changes in a forward pass"),
                          ([_Counter(), torch.nn.Linear(3, 3)], r"stage 0's buffer 'calls' \(_Counter\) changes in a forward pass")):
        before = [b.clone() for b in (stages.buffers() if isinstance(stages, torch.nn.Module) else stages[0].buffers())]
        with pytest.raises(stale.ConfigError, match=match) as e:
            st.TorchStages(stages, (X, y), torch.nn.functional.cross_entropy, batch_size=8)
        assert "\n" not in str(e.value) and "track_running_stats=False" in str(e.value)
        # the modules handed over are not touched by the check
        after = list(stages.buffers() if isinstance(stages, torch.nn.Module) else stages[0].buffers())
        assert all(torch.equal(a, b) for a, b in zip(after, before))
    # batch statistics without running ones, and a constant buffer, are functions of the batch and w:
    # a second run of the same model repeats the first bit for bit
    net = with_norm(torch.nn.BatchNorm1d(12, track_running_stats=False))
    net[1].register_buffer("scale", torch.tensor(2.0, dtype=torch.float64))
    net[1].register_forward_hook(lambda mod, inp, out: out * mod.scale)
    model = st.TorchStages(net, (X, y), torch.nn.functional.cross_entropy, batch_size=8, validation=data(16, seed=9))
    case = {**RUN, "method.name": "pipedream", "method.updates": 48, "log.every": 8}
    a, b = stale.run(case, model=model), stale.run(case, model=model)
    assert_runs_close(b, a, rtol=0)
    assert a.status == "ok" and np.all(np.isfinite(a.series("val_loss")))


class _LstmStage(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(6, 5, batch_first=True)

    def forward(self, x):
        return self.lstm(x.unsqueeze(1))  # (out, (h, c)): not one tensor


def test_a_tuple_output_an_in_place_input_and_a_non_scalar_loss_are_one_line_errors(tmp_path):
    X, y = data()
    X0 = X.copy()
    L, ce = torch.nn.Linear, torch.nn.functional.cross_entropy
    torch.manual_seed(0)
    cases = [
        ([_LstmStage(), L(5, 3)], ce, r"stage 0 \(_LstmStage\) returned a tuple; a stage returns one tensor"),
        # stage 0's input is the data (torch.as_tensor shares the caller's float64 array): the
        # check runs on a copy, so the refusal leaves X as it was
        ([torch.nn.Sequential(torch.nn.ReLU(inplace=True), L(6, 12)), L(12, 3)], ce,
         r"stage 0 \(Sequential\) changes its input in place"),
        ([torch.nn.Sequential(L(6, 12), torch.nn.Tanh()), torch.nn.Sequential(torch.nn.ReLU(inplace=True), L(12, 3))], ce,
         r"stage 1 \(Sequential\) changes its input in place"),
        ([L(6, 12), L(12, 3)], lambda o, t: ce(o, t, reduction="none"), r"loss_fn returned \(8,\); it must return the batch's mean loss"),
        ([L(6, 12), L(12, 3)], lambda o, t: ce(o, t).item(), r"loss_fn returned float"),
    ]
    for stages, loss, match in cases:
        with pytest.raises(stale.ConfigError, match=match) as e:
            stale.run({**RUN, "method.name": "pipedream"}, model=st.TorchStages(stages, (X, y), loss, batch_size=8),
                      out=tmp_path / "x.h5")
        assert "\n" not in str(e.value)
        np.testing.assert_array_equal(X, X0)
    assert list(tmp_path.iterdir()) == []


def test_a_resume_with_other_data_or_stages_is_refused_and_force_continues(tmp_path, capfd):
    import shutil

    import h5py

    case = {**RUN, "method.name": "paci", "method.updates": 64, "log.every": 4, "log.flush_seconds": 0.0}
    whole = stale.run(case, model=classifier(), out=tmp_path / "whole.h5")
    assert len(whole.objective["data_sha256"]) == 64 and whole.objective["data_path"] == ""
    partial = _cut(classifier(), case, tmp_path / "cut.h5")
    X, y = data()
    others = {
        "other data": st.TorchStages(mlp(), (X + 1e-12, y), torch.nn.functional.cross_entropy, batch_size=8),
        "other labels": st.TorchStages(mlp(), (X, (y + 1) % 3), torch.nn.functional.cross_entropy, batch_size=8),
        "other activation": st.TorchStages(torch.nn.Sequential(*[torch.nn.Sequential(m[0], torch.nn.ReLU()) if i < 2 else m
                                                                   for i, m in enumerate(mlp())]), (X, y),
                                           torch.nn.functional.cross_entropy, batch_size=8),
        "other dtype": classifier(dtype=torch.float32),
    }
    other_batches = st.TorchStages(mlp(), (X, y), torch.nn.functional.cross_entropy, batch_size=6)
    for what, model in others.items():
        with pytest.raises(stale.ConfigError, match=r"cut\.h5\.partial: the model's data or stages changed since the "
                                                    r"checkpoint .*resume with the model the run started from, or with "
                                                    r"force=True") as e:
            stale.run(resume=partial, model=model)
        assert "\n" not in str(e.value), what
    # refused without touching the .partial: the model it started from resumes it, bit for bit
    kept = tmp_path / "kept.h5.partial"
    shutil.copy(partial, kept)
    # a checkpoint cannot continue on another shape (it was a reshape error): without force the
    # data's check speaks first, with force this one
    with pytest.raises(stale.ConfigError, match=r"the model's data or stages changed since the checkpoint"):
        stale.run(resume=str(kept), model=other_batches)
    with pytest.raises(stale.ConfigError, match=r"kept\.h5\.partial: the model's shape changed since the checkpoint "
                                                r"\(blocks \[84, 156, 39\], 48 samples in 6 batches then, blocks "
                                                r"\[84, 156, 39\], 48 samples in 8 batches now\); a checkpoint continues "
                                                r"only on its own shape, even with force") as e:
        stale.run(resume=str(kept), model=other_batches, force=True)
    assert "\n" not in str(e.value)
    resumed = stale.run(resume=partial, model=classifier())
    assert_runs_close(resumed, whole, rtol=0)
    # force=True continues on the other model and says so in the file
    capfd.readouterr()
    forced = stale.run(resume=str(kept), model=others["other data"], force=True)
    assert forced.status == "ok"
    assert "continued with force=True although the model's data or stages changed" in capfd.readouterr().err
    with h5py.File(tmp_path / "kept.h5", "r") as f:
        note = f.attrs["resume_forced"]
        assert "the model's data or stages changed" in (note.decode() if isinstance(note, bytes) else note)


class _Linear(torch.nn.Linear):
    """a Linear whose forward is another function under the same repr"""

    def forward(self, x):
        return torch.nn.functional.linear(x, self.weight, self.bias) * 1.0


class _Linear2(torch.nn.Linear):
    def forward(self, x):
        return torch.nn.functional.linear(x, self.weight, self.bias) * 2.0


_Linear2.__name__ = "_Linear"  # the same repr as _Linear's: an edited forward under an unchanged class


def test_a_resume_with_another_loss_or_another_forward_under_the_same_repr_is_refused(tmp_path):
    """issue 54: the fingerprint covers the loss and the modules' code, not only their repr"""
    case = {**RUN, "method.name": "pipedream", "method.updates": 64, "log.every": 4, "log.flush_seconds": 0.0}
    X, y = data()

    def net(cls):
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Sequential(cls(6, 12), torch.nn.Tanh()), torch.nn.Sequential(cls(12, 3)))

    def make(cls=_Linear, loss=torch.nn.functional.cross_entropy):
        return st.TorchStages(net(cls), (X, y), loss, batch_size=8)

    partial = _cut(make(), case, tmp_path / "cut.h5")
    scale = 10.0
    others = {"another loss": make(loss=lambda o, t: torch.nn.functional.nll_loss(torch.log_softmax(o, 1), t)),
              "a scaled loss": make(loss=lambda o, t: scale * torch.nn.functional.cross_entropy(o, t)),
              "another forward, same repr": make(_Linear2)}
    assert repr(others["another forward, same repr"].modules) == repr(make().modules)
    for what, model in others.items():
        with pytest.raises(stale.ConfigError, match="the model's data or stages changed since the checkpoint"):
            stale.run(resume=partial, model=model)
    assert stale.run(resume=partial, model=make()).status == "ok"


class _ClampsItsWeight(torch.nn.Linear):
    def forward(self, x):
        self.weight.data.clamp_(-0.1, 0.1)
        return super().forward(x)


def test_a_forward_that_changes_its_own_parameters_is_refused():
    """issue 54: in-place changes of a weight in a forward were kept or lost depending on the
    stage's size and dtype; the construction probe finds them"""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.Tanh()), _ClampsItsWeight(12, 3))
    with pytest.raises(stale.ConfigError, match=r"stage 1's parameter 'weight' changes in its forward pass") as e:
        st.TorchStages(net, data(), torch.nn.functional.cross_entropy, batch_size=8)
    assert "\n" not in str(e.value)


def test_one_model_in_two_concurrent_runs_is_refused():
    """issue 54: the adapter's tensors are one run's state; a second run on the same model from
    another thread (the first has released the GIL) is refused, and the model runs again after"""
    import threading

    started, release = threading.Event(), threading.Event()

    class Gate(torch.nn.Module):
        def forward(self, x):
            if torch.is_grad_enabled():  # not in the construction probe
                started.set()
                release.wait(30)
            return x

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(6, 12), Gate(), torch.nn.Tanh()), torch.nn.Linear(12, 3))
    model = st.TorchStages(net, data(), torch.nn.functional.cross_entropy, batch_size=8)
    case = {**RUN, "method.name": "pipedream", "method.updates": 16, "log.every": 4}
    out = {}
    first = threading.Thread(target=lambda: out.setdefault("first", stale.run(case, model=model)))
    first.start()
    assert started.wait(30)
    try:
        with pytest.raises(stale.ConfigError, match="this model is already in a run"):
            stale.run(case, model=model)
    finally:
        release.set()
        first.join(60)
    assert out["first"].status == "ok"
    assert stale.run(case, model=model).status == "ok"  # free again

