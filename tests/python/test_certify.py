"""PEP certificates (python/stale/certify.py, issue 46): known values against PEPit's own examples,
soundness against runs that could exceed a wrong certificate, and trust checks that refuse.
Every case is K ≤ 8 (each solve well under 3 s with Clarabel on 2 cores)."""
import importlib
import warnings

import numpy as np
import pytest

pytest.importorskip("PEPit", reason='PEPit is not installed: pip install "stale[certify]" (pepit, cvxpy, clarabel, scs)')
pytest.importorskip("clarabel", reason='clarabel is not installed: pip install "stale[certify]"')
import stale  # noqa: E402

C = importlib.import_module("stale.certify")  # stale.certify is the function; the module by name
warnings.filterwarnings("ignore", message="Solution may be inaccurate")

# pipedream's own 1F1B pattern on S = 2 blocks, K = 8: reads up to δ = 3 versions old, and the
# convex PEP of it solves to status "optimal" with every check passing (a case the tests can trust)
PD = {"method.name": "pipedream", "objective.stages": 2, "method.updates": 8, "method.lr": 0.5}
TOL = 1e-6  # the checks' default tolerance; Clarabel's own are 1e-8


def test_gradient_descent_nonconvex_equals_pepit_example():
    """S = 1, δ = 0 is gradient descent; with PEPit's example's measure (min_{k≤K} ‖∇f(w_k)‖²) and
    initial condition (f(w_0) − f(w_K) ≤ 1) the harness's PEP is that example."""
    from PEPit.examples.nonconvex_optimization.gradient_descent import wc_gradient_descent
    pat = C.read_pattern(None, **{"method.name": "bcd", "objective.stages": 1, "method.updates": 5, "method.lr": 1.0})
    assert (pat.delays == 0).all() and (pat.stages == 0).all()
    r = C.solve(pat, "nonconvex", 1.0, measure="min", initial="last")
    ref, theory = wc_gradient_descent(L=1, gamma=1, n=5, wrapper="cvxpy", solver="CLARABEL", verbose=-1)
    assert "refused" not in r
    assert r["worst_case"] == pytest.approx(ref, abs=1e-7)
    assert r["worst_case"] == pytest.approx(theory, abs=1e-7)  # 4/(3n): Abbaszadehpeivasti et al.


def test_gradient_descent_convex_equals_pepit_example():
    from PEPit.examples.unconstrained_convex_minimization.gradient_descent import wc_gradient_descent
    pat = C.read_pattern(None, **{"method.name": "bcd", "objective.stages": 1, "method.updates": 4, "method.lr": 1.0})
    r = C.solve(pat, "convex", 1.0)
    ref, theory = wc_gradient_descent(L=1, gamma=1, n=4, wrapper="cvxpy", solver="CLARABEL", verbose=-1)
    assert "refused" not in r
    assert r["worst_case"] == pytest.approx(ref, abs=1e-7)
    assert r["worst_case"] == pytest.approx(theory, abs=1e-6)  # L/(4n + 2) (Drori & Teboulle)


@pytest.mark.parametrize("S, K, strict", [(2, 4, True), (3, 6, False)])
def test_cyclic_coordinate_descent_equals_pepit_example(S, K, strict):
    """S blocks, δ = 0, cyclic order, γ = 1/L over the block-smooth convex class is PEPit's cyclic
    coordinate descent example. The pattern is built here (no executor method draws a cyclic
    order with fresh reads); S = 3, K = 6 ends "optimal_inaccurate" in Clarabel, PEPit's own
    example too, so it is compared with the independent checks deciding at tol 1e-4."""
    from PEPit.examples.unconstrained_convex_minimization.cyclic_coordinate_descent import wc_cyclic_coordinate_descent
    k = np.arange(K)
    pat = C.Pattern(np.zeros((K, S), dtype=np.int64), k % S, k, S, K, 1.0, None)
    r = C.solve(pat, "block-smooth-convex", 1.0, tol=TOL if strict else 1e-4, accept_inaccurate=not strict)
    ref, _ = wc_cyclic_coordinate_descent(L=[1.0] * S, n=K, wrapper="cvxpy", solver="CLARABEL", verbose=-1)
    assert "refused" not in r, r.get("refused")
    assert (r["status"] == "optimal") == strict
    assert r["worst_case"] == pytest.approx(ref, abs=1e-6)  # measured: within 1e-9 of it


def test_sgd_steps_are_gradient_descent():
    """An sgd step writes every block (stage −1) and counts S block updates: K = 8, S = 2 is 4
    steps of gradient descent, L/(4n + 2) = 1/18 at γ = 1/L (PEPit's convex example)."""
    pat = C.read_pattern(None, **{"method.name": "sgd", "objective.stages": 2, "method.updates": 8, "method.lr": 1.0})
    assert list(pat.stages) == [-1] * 4 and list(pat.k) == [0, 2, 4, 6]
    r = C.solve(pat, "convex", 1.0)
    assert "refused" not in r
    assert r["worst_case"] == pytest.approx(1 / 18, abs=1e-7)


def test_pattern_is_the_executors_and_independent_of_the_objective():
    """The certificate's reads are the run's: Run.delays / metrics `stage` of the config's own
    objective equal those of the probe quadratic (separate seeded streams, theory.md §2)."""
    ov = {"method.name": "rpd", "delay.name": "uniform", "delay.max": 3, "objective.stages": 4, "method.updates": 12,
          "objective.dim": 16, "objective.samples": 40, "log.every": 1, "log.progress": False, "seed": 7}
    pat = C.read_pattern(None, **ov)
    own = stale.run(None, **ov)
    assert np.array_equal(pat.delays, own.delays)
    assert np.array_equal(pat.stages, own.series("stage")[1:])
    # the numpy twin reproduces the executor's iterates on its probe quadratic
    o = stale.objective(None, **{k: v for k, v in pat.run.config.items() if k.startswith(("objective.", "seed"))})
    X, y = o["X"], o["y"]
    ws, wK, _ = C.replay(pat, lambda w: X.T @ (X @ w - y) / X.shape[0], pat.run.iterates[0])
    assert np.abs(np.array(ws + [wK]) - pat.run.iterates).max() < 1e-12


def test_refuses_methods_the_pep_cannot_express():
    for name in ("pipedream-nostash", "pipemare", "paci", "2bw", "localsgd"):
        with pytest.raises(stale.ConfigError, match=f"method.name = {name}"):
            C.read_pattern(None, **{"method.name": name, "objective.stages": 2, "method.updates": 8})
    with pytest.raises(stale.ConfigError, match="method.optimizer"):
        C.read_pattern(None, **PD, **{"method.optimizer": "momentum"})


def test_runs_never_exceed_the_certificate_and_a_wrong_pattern_differs():
    """Soundness that can fail: 60 random quadratics (eigenvalues in [0, 1], random rotations)
    and 20 logistic regressions (L = ‖X‖²/(4n) scaled to 1) run with the certified pattern stay
    below the worst case; the pattern one version fresher gives another certificate, which
    run of the true pattern exceeds or which differs by more than 10 tol."""
    pat = C.read_pattern(None, **PD)
    assert pat.delta == 3
    r = C.solve(pat, "convex", 1.0)
    assert "refused" not in r, r.get("refused")
    wc = r["worst_case"]
    rng = np.random.default_rng(46)
    runs = []
    for _ in range(60):
        q = C.random_quadratic(6, 1.0, 0.0, rng)
        w0 = q["w_star"] + rng.standard_normal(6)
        runs.append(C.measure_value(pat, "convex", q["f"], q["grad"], w0, 0.0, q["w_star"]))
    assert max(runs) <= wc + TOL
    assert max(runs) > 0.05 * wc  # the instances are not trivially far below it
    for _ in range(20):  # logistic regression, minimiser found by Newton's method
        n, d = 30, 6
        X = rng.standard_normal((n, d))
        X /= np.sqrt(np.linalg.eigvalsh(X.T @ X / (4 * n)).max())  # L = λ_max(XᵀX)/(4n) = 1
        yl = rng.choice([-1.0, 1.0], n)
        lam = 1e-3

        def f(w):
            return np.mean(np.logaddexp(0, -yl * (X @ w))) + 0.5 * lam * w @ w

        def grad(w):
            return -X.T @ (yl / (1 + np.exp(yl * (X @ w)))) / n + lam * w
        ws = np.zeros(d)
        for _ in range(50):
            p = 1 / (1 + np.exp(-yl * (X @ ws)))
            H = (X.T * (p * (1 - p))) @ X / n + lam * np.eye(d)
            ws -= np.linalg.solve(H, grad(ws))
        # (1 + λ)-smooth: the class constant L = 1 + λ; the runs are compared after rescaling f by 1/(1 + λ)
        s = 1.0 / (1.0 + lam)
        w0 = ws + rng.standard_normal(d)
        v = C.measure_value(pat, "convex", lambda w: s * f(w), lambda w: s * grad(w), w0, s * f(ws), ws)
        runs.append(v)
    assert max(runs) <= wc + TOL
    wrong = C.solve(pat.shifted(1), "convex", 1.0, accept_inaccurate=True)
    assert abs(wrong["worst_case"] - wc) > 10 * TOL  # measured: 0.10076 against 0.10145


def test_nonconvex_runs_never_exceed_the_certificate():
    """The nonconvex class: 50 convex quadratics and 20 nonconvex f = quadratic + β Σ cos(w_i)
    (L-smooth with L = 1: λ_max(H) ≤ 1 − β; f_low = −β d ≤ inf f, so Δ₀ = f(w₀) − f_low ≥ the true
    gap), run with RPD's seed-0 pattern at constant δ = 2, stay below its certificate."""
    pat = C.read_pattern(None, **{"method.name": "rpd", "delay.name": "constant", "delay.max": 2,
                                  "objective.stages": 2, "method.updates": 8, "method.lr": 0.5})
    assert pat.delta == 2
    r = C.solve(pat, "nonconvex", 1.0)
    assert "refused" not in r, r.get("refused")
    wc = r["worst_case"]
    rng = np.random.default_rng(7)
    runs = []
    for i in range(70):
        d = 6
        beta = 0.0 if i < 50 else 0.3
        q = C.random_quadratic(d, 1.0 - beta, 0.0, rng)
        H, a = q["H"], q["w_star"]

        def f(w, H=H, a=a, beta=beta):
            return 0.5 * (w - a) @ H @ (w - a) + beta * np.cos(w).sum()

        def grad(w, H=H, a=a, beta=beta):
            return H @ (w - a) - beta * np.sin(w)
        w0 = a + 2 * rng.standard_normal(d)
        runs.append(C.measure_value(pat, "nonconvex", f, grad, w0, None, f_low=-beta * d))
    assert max(runs) <= wc + TOL
    assert max(runs) > 0.1 * wc
    wrong = C.solve(pat.shifted(1), "nonconvex", 1.0, accept_inaccurate=True, tol=1e-4)
    assert abs(wrong["worst_case"] - wc) > 10 * TOL


def test_certify_returns_checks_writes_the_file_and_labels_what_it_certifies(tmp_path):
    import h5py
    c = stale.certify(None, out=tmp_path / "c.h5", function_class="convex", **PD)
    assert c["status"] == "optimal" and c["solver"] == "clarabel" and c["solver_flag"] == ""
    assert c["worst_case"] >= c["lower_bound"] - TOL and c["lower_bound"] > 0
    assert abs(c["duality_gap"]) < TOL and c["proof_remainder"] < TOL
    assert c["certifies"].startswith("deterministic pattern")
    with h5py.File(tmp_path / "c.h5") as f:
        assert f.attrs["worst_case"] == c["worst_case"] and f["delays"].shape == (8, 2)
    assert not (tmp_path / "c.h5.tmp").exists()


def test_lower_bound_check_can_fail(monkeypatch):
    """Positive control of the lower-bound check: a solver answer below a run of the same pattern
    on a quadratic of the class (here the true certificate scaled by 0.1, every other check
    passing) is refused in one line."""
    real = C.solve

    def too_small(*args, **kw):
        r = real(*args, **kw)
        r["worst_case"] *= 0.1
        return r
    monkeypatch.setattr(C, "solve", too_small)
    with pytest.raises(stale.ConfigError, match="is below a run of the same pattern on a quadratic of the class"):
        stale.certify(None, function_class="convex", **PD)


def test_scs_agrees_loosely_and_a_too_loose_scs_is_refused():
    pat = C.read_pattern(None, **PD)
    ref = C.solve(pat, "convex", 1.0)["worst_case"]
    scs = C.solve(pat, "convex", 1.0, solver="scs", tol=1e-3, solver_options={"eps": 1e-7, "max_iters": 200000})
    assert "refused" not in scs, scs.get("refused")
    assert scs["worst_case"] == pytest.approx(ref, abs=1e-3)
    loose = C.solve(pat, "convex", 1.0, solver="scs", tol=1e-6, solver_options={"eps": 1e-1, "max_iters": 50})
    assert "refused" in loose
    with pytest.raises(stale.ConfigError, match="certificate refused"):
        stale.certify(None, function_class="convex", solver="scs", tol=1e-6,
                      solver_options={"eps": 1e-1, "max_iters": 50}, **PD)


def test_bad_options_are_one_line_errors():
    with pytest.raises(stale.ConfigError, match="function_class = 'concave'"):
        stale.certify(None, function_class="concave", **PD)
    with pytest.raises(stale.ConfigError, match="solver = 'mosek'"):
        stale.certify(None, solver="mosek", **PD)
    with pytest.raises(stale.ConfigError, match="strongly-convex needs mu > 0"):
        stale.certify(None, function_class="strongly-convex", **PD)


def test_missing_dependency_names_the_install(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "PEPit", None)  # import PEPit now raises ImportError
    with pytest.raises(stale.ConfigError, match=r'pip install "stale\[certify\]"'):
        stale.certify(None, **PD)


def test_command_line_prints_writes_and_refuses_in_one_line(tmp_path):
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = os.path.join(root, "scripts", "certify.py")
    args = [f"{k}={v}" for k, v in PD.items()]
    ok = subprocess.run([sys.executable, script, "-", *args, "--class", "convex", "--out", str(tmp_path / "c.h5")],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "worst case of f(w_K) − f_* per unit ‖w_0 − w_*‖²: 0.1014" in ok.stdout and (tmp_path / "c.h5").exists()
    bad = subprocess.run([sys.executable, script, "-", "method.name=pipedream-nostash", "objective.stages=2",
                          "method.updates=8"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("error: method.name = pipedream-nostash")


def test_stale_certify_runs_the_script_through_the_command_layer(stale_bin, tmp_path):
    """`stale certify` (src/cli/certify_command.cpp) execs scripts/certify.py: the same line, the
    same file, the same one-line refusal with exit code 2"""
    import subprocess
    cfg = tmp_path / "pd.toml"
    cfg.write_text("".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in {"seed": 0}.items())
                   + "[objective]\nname = \"quadratic\"\nstages = 2\n[method]\nname = \"pipedream\"\nlr = 0.5\nupdates = 8\n")
    ok = subprocess.run([stale_bin, "certify", str(cfg), "--class", "convex", "--out", str(tmp_path / "c.h5")],
                        capture_output=True, text=True)
    if "certify" in ok.stderr and "unknown" in ok.stderr.lower():
        pytest.skip(f"{stale_bin} has no certify command (built before it)")
    assert ok.returncode == 0, ok.stderr
    assert "per unit ‖w_0 − w_*‖²: 0.1014" in ok.stdout and (tmp_path / "c.h5").exists()
    bad = subprocess.run([stale_bin, "certify", str(cfg), "method.name=pipedream-nostash"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "pipedream-nostash" in bad.stderr


def test_max_over_seeds_is_labelled_and_is_the_max():
    ov = {"method.name": "rpd", "delay.name": "uniform", "delay.max": 2, "objective.stages": 2, "method.updates": 8,
          "method.lr": 0.5}
    c = stale.certify(None, function_class="convex", seeds=2, tol=1e-4, accept_inaccurate=True, **ov)
    assert c["seeds"] == [0, 1] and c["worst_case"] == max(c["worst_case_per_seed"])
    assert c["certifies"].startswith("max over 2 sampled patterns") and "not an expectation" in c["certifies"]
    one = stale.certify(None, function_class="convex", tol=1e-4, accept_inaccurate=True, **ov)
    assert one["certifies"].startswith("realised pattern of seed 0")
    assert one["worst_case"] == pytest.approx(c["worst_case_per_seed"][0], abs=1e-9)


def test_strongly_convex_is_a_subclass():
    """μ-strongly convex functions are convex: the worst case over them is at most the convex one
    (measured: 0.0830 at μ = 0.1 against 0.1015), and above runs on quadratics with spectrum in [μ, L]."""
    s = stale.certify(None, function_class="strongly-convex", mu=0.1, **PD)
    c = stale.certify(None, function_class="convex", **PD)
    assert s["status"] == "optimal" and s["lower_bound"] > 0
    assert s["lower_bound"] <= s["worst_case"] < c["worst_case"] - 1e-3


def test_bounded_block_gradient_binds_and_runs_in_its_class_stay_below():
    """§3's ‖∇_j f(z_k)‖ ≤ G as a PEP constraint (units of Δ₀ = 1): G² = 0.5 lowers the worst case
    (the constraint binds: a positive control that it is imposed), the worst-case instance
    respects it, the bound is evaluated with the given G, and runs on quadratics inside the class
    (their G² per unit Δ₀ ≤ 0.5) stay below the certificate."""
    ov = {"method.name": "rpd", "delay.name": "constant", "delay.max": 2, "objective.stages": 2,
          "method.updates": 8, "method.lr": 0.5}
    free = stale.certify(None, **ov)
    c = stale.certify(None, G=0.5 ** 0.5, tol=1e-4, accept_inaccurate=True, **ov)
    assert c["worst_case"] < free["worst_case"] - 1e-2
    assert c["G_worst_sq"] <= 0.5 + 1e-4
    assert c["bound_stale"] == pytest.approx(0.5 ** 2 * 2 ** 2 * 0.5)  # γ² L² δ² G²
    pat = C.read_pattern(None, **ov)
    rng = np.random.default_rng(3)
    inside = []
    for _ in range(60):
        q = C.random_quadratic(6, 0.25, 0.0, rng)
        v, g2 = C.measure_value(pat, "nonconvex", q["f"], q["grad"], q["w_star"] + rng.standard_normal(6), 0.0,
                                with_G=True)
        if g2 <= 0.5:
            inside.append(v)
    assert len(inside) >= 20 and max(inside) <= c["worst_case"] + 1e-4
    with pytest.raises(stale.ConfigError, match="G = 1.0: the bounded block gradient"):
        stale.certify(None, function_class="convex", G=1.0, **PD)


def test_status_check_refuses_an_inaccurate_answer_by_default():
    """Positive control of the status check: S = 3, K = 6 cyclic coordinate descent ends
    "optimal_inaccurate" in Clarabel under every retry; the strict default refuses it, naming the status."""
    k = np.arange(6)
    pat = C.Pattern(np.zeros((6, 3), dtype=np.int64), k % 3, k, 3, 6, 1.0, None)
    r = C.solve(pat, "block-smooth-convex", 1.0)
    assert r["status"] == "optimal_inaccurate" and "solver status 'optimal_inaccurate'" in r["refused"]


def _tightness():
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
    return importlib.import_module("certify_tightness")


def test_descriptive_exponent_recovers_a_power_law_and_counts_points():
    """scripts/certify_tightness.py's fit of the worst case against δ, γ and S: exact on a·x^p,
    with the ≥ 5-point rule of the audits counted, and non-positive points left out (not fitted)"""
    T = _tightness()
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    f = T.descriptive_exponent(x, 3 * x ** 2)
    assert f["exponent"] == pytest.approx(2.0, abs=1e-12) and f["prefactor"] == pytest.approx(3.0, rel=1e-12)
    assert f["points"] == 5 and f["rule_met"] and f["max_log_residual"] < 1e-12
    # positive control: one point moved off the law changes the slope and shows in the residual
    y = 3 * x ** 2
    y[-1] *= 4
    g = T.descriptive_exponent(x, y)
    assert g["exponent"] > 2.2 and g["max_log_residual"] > 0.3
    # four positive points: fitted, but the rule is not met; fewer than 2: no fit
    h = T.descriptive_exponent(x, np.array([0.0, 1.0, 2.0, 4.0, 8.0]))
    assert h["points"] == 4 and not h["rule_met"] and h["exponent"] == pytest.approx(1.0, abs=1e-12)
    assert T.descriptive_exponent([1.0, 2.0], [1.0, -1.0])["exponent"] is None


def test_tightness_verdict_says_tight_only_where_the_exponents_agree():
    T = _tightness()
    x = np.arange(1.0, 6.0)
    flat, square = T.descriptive_exponent(x, 0 * x + 1), T.descriptive_exponent(x, x ** 2)
    assert "not tight" in T.tightness_verdict(flat, square, "δ") and "rule met" in T.tightness_verdict(flat, square, "δ")
    assert "tight" in T.tightness_verdict(square, square, "S") and "not tight" not in T.tightness_verdict(square, square, "S")
    assert "faster than the bound" in T.tightness_verdict(square, flat, "γ")
    assert "NOT met" in T.tightness_verdict(T.descriptive_exponent(x[:3], x[:3]), square, "S")
    # a U-shaped worst case (as in γ) is not described by its slope: the verdict says so
    u = T.descriptive_exponent(x, (x - 3) ** 2 + 0.5)
    assert "not one power law" in T.tightness_verdict(u, square, "γ")


def test_pipedream_stage_sweep_rows_certify_and_exceed_the_runs():
    """The S sweep's smallest point (pipedream's own table, S = 2, K = 4S = 8) through the script's
    one(): a certified value at or above every run on quadratics (the lower-bound check), δ = 3"""
    T = _tightness()
    r = T.one("pd S=2", {"method.name": "pipedream", "objective.stages": 2, "method.updates": 8, "method.lr": 0.5})
    assert "refused" not in r, r.get("refused")
    assert r["delta"] == 3 and r["worst_case"] >= r["lower_bound"] - T.TOL
    assert r["bound"] > r["worst_case"]  # 5.5 against 0.656 (results/CERTIFICATES.md)
