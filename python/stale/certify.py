"""Performance-estimation (PEP) certificates of stale block gradient methods: the exact worst
case of a performance measure over a whole function class, for the read pattern the harness's
executor runs (issue 46; docs/theory.md §12).

    import stale
    c = stale.certify(None, function_class="convex", L=1.0, out="pd.cert.h5",
                      **{"method.name": "pipedream", "objective.stages": 2, "method.updates": 8, "method.lr": 0.5})
    c["worst_case"], c["lower_bound"], c["status"], c["certifies"]   # 0.1015, 0.0253, 'optimal', ...

**The method as a PEP.** A run of K block updates reads, at update k, block j of the model as it
was d_kj block updates earlier, and writes block s_k (s_k = −1: every block, an sgd step):

    z_k     = Σ_j P_j w_{k − d_kj}                    (the mixed read point, theory.md §1)
    w_{k+1} = w_k − γ P_{s_k} ∇f(z_k)                 (P_{−1} = I)

d_kj and s_k are not re-derived here: they are taken from a run of the configured method
(stale.run with log.delays = true and a metrics row per update: `Run.delays[k, j]` is the lag of
block j read by update k, metrics row k + 1's `stage` the block update k wrote). Every gradient
is the full gradient ∇f: a certificate is about the deterministic method with that pattern, the
config's mini-batches and gradient noise are not part of it. P_j are the block projections of
PEPit's `BlockPartition` (mutually orthogonal, summing to I); by linearity only the leaf points
(w_0 and the gradients) are partitioned, P_j w_k = P_j w_0 − γ Σ_{i<k, s_i ∈ {j, −1}} P_j ∇f(z_i).

**Classes and measures** (Taylor, Hendrickx & Glineur 2017, "Smooth strongly convex interpolation
and exact worst-case performance of first-order methods", Math. Program. 161; interpolation
conditions as PEPit implements them, Goujaud, Moucer, Glineur, Hendrickx, Taylor & Dieuleveut
2024, "PEPit: computer-assisted worst-case analyses of first-order optimization methods in
Python", Math. Program. Comput. 16):

- ``nonconvex``: f L-smooth, f(p) − ‖∇f(p)‖²/(2L) ≥ f(w_0) − Δ₀ (Δ₀ = 1) at every point p the
  PEP evaluates — what inf f ≥ f(w_0) − Δ₀ implies there, so a relaxation of that class and the
  value an upper bound on its worst case;
  measure (1/K) Σ_{k<K} ‖∇f(w_k)‖² (an sgd step counts S block updates, w constant over them),
  the left side of the §3 bound of [RPD] (Ilin & Richtárik 2026, arXiv 2606.03498); optionally
  (G) with §3's assumption ‖∇_j f(z_k)‖ ≤ G at every read point and block;
- ``convex`` (μ = 0) and ``strongly-convex`` (μ > 0): f L-smooth, μ-strongly convex, measure
  f(w_K) − f_* with ‖w_0 − w_*‖² ≤ 1;
- ``block-smooth-convex``: f convex and L-smooth along each block (coordinate descent's class,
  PEPit's BlockSmoothConvexFunctionCheap: necessary interpolation conditions only, so an upper
  bound), the same measure; there for the comparison with PEPit's cyclic coordinate descent.

Both measures are homogeneous: the value is "per unit Δ₀" and "per unit ‖w_0 − w_*‖²".

**What is certified, and what a random pattern means.** One PEP certifies one deterministic
pattern. `seeds=None` certifies the pattern the config's seed draws ("realised pattern of seed
s": the worst case over the class, for that one draw of delays and blocks); `seeds=N`
certifies the patterns of N seeds and reports their maximum ("max over N sampled patterns": a
bound for those N patterns only). Neither is an expectation over the draws.

**Trust checks** (every value reported passed them, else stale.ConfigError in one line): the
solver's status is "optimal" (or, with accept_inaccurate, "optimal_inaccurate", flagged, when
the rest pass; Clarabel is retried with CLARABEL_RETRIES first); the primal Gram matrix and the dual residual matrix are PSD and
the primal constraints hold, the inequality multipliers are ≥ 0 and PEPit's proof
reconstruction leaves no remainder, and the primal and dual values agree, each within `tol`
times max(1, value); and the certified value is at least the measured value of
runs of the same method, same pattern, on quadratics of the class (the executor's own run on a
`spectrum` quadratic with eigenvalues in [max(μ, 10⁻³L), L], plus numpy replays on random
rotated quadratics): a worst case below an instance of its class is wrong.
Clarabel is the default solver; SCS only on request, and flagged in the result.
"""
from __future__ import annotations

import math
import os
import time
import warnings

import numpy as np

from ._stale import ConfigError

CLASSES = ("nonconvex", "convex", "strongly-convex", "block-smooth-convex")
SOLVERS = ("clarabel", "scs")
INSTALL = 'pip install "stale[certify]" (or: pip install pepit cvxpy clarabel scs)'


def _need_pepit():
    try:
        import PEPit  # noqa: F401
        import cvxpy  # noqa: F401
    except ImportError as e:
        raise ConfigError(f"stale certify needs PEPit and cvxpy ({e.name} is missing): {INSTALL}") from None


def check_method(config: dict) -> None:
    """Refuse, in one line naming the method, a config whose updates are not a gradient at one
    read point: the PEP above cannot express them (the registry's facts, not a list of names)."""
    from .api import components
    name = config["method.name"]
    row = next(m for m in components("methods")["methods"] if m["name"] == name)
    if row["kind"] == "schedule":
        sched = next(s for s in components("schedules")["schedules"] if s["name"] == row["schedule"])
        if row["predict"]:
            raise ConfigError(f"method.name = {name}: its forward reads extrapolated weights (prediction), not a "
                              f"stored version; certify rpd, bcd, sgd, pipedream or pipedream-capped")
        if not row["stash"] and not sched["flush"]:
            raise ConfigError(f"method.name = {name}: without weight stashing its backward reads a different version "
                              f"than its forward, not a gradient at one point; certify pipedream (stashing) instead")
        if sched["accumulates"] or sched["replicated"]:
            raise ConfigError(f"method.name = {name}: a step averages several micro-batch gradients"
                              f"{' of replicas' if sched['replicated'] else ''}, not one gradient per update; "
                              f"certify rpd, bcd, sgd, pipedream or pipedream-capped")
    for key, plain in (("method.optimizer", "sgd"), ("method.lr_schedule", "constant")):
        if config.get(key, plain) != plain:
            raise ConfigError(f"{key} = {config[key]}: certify builds the plain step w − γ P_s ∇f(z); set {key}={plain}")
    if int(config.get("method.warmup", 0)) != 0:
        raise ConfigError(f"method.warmup = {config['method.warmup']}: certify builds a constant step size; set method.warmup=0")


class Pattern:
    """The read pattern of one run: per update u, the versions read (`delays[u]`, one per block,
    in block updates), the block written (`stages[u]`, −1 = all) and the block update counter at
    its start (`k[u]`); plus the executor's own run (on the spectrum quadratic) it came from."""

    def __init__(self, delays, stages, k, S, K, gamma, run):
        self.delays, self.stages, self.k = delays, stages, k
        self.S, self.K, self.gamma, self.run = S, K, gamma, run

    @property
    def delta(self) -> int:
        return int(self.delays.max()) if self.delays.size else 0

    def shifted(self, by: int = 1) -> "Pattern":
        """The same pattern with every stale read one version fresher (a deliberately wrong
        pattern, for the tests' positive control)."""
        return Pattern(np.maximum(self.delays - by, 0), self.stages, self.k, self.S, self.K, self.gamma, None)


def read_pattern(config=None, *, L=1.0, mu=0.0, seed=None, **overrides) -> Pattern:
    """Run the configured method (its method, delay and schedule keys) on a small one-batch
    `spectrum` quadratic with eigenvalues in [max(μ, 10⁻³L), L] and take its reads: the stage and
    delay draws come from their own seeded streams (theory.md §2), so the objective does not
    change them (tests/python/test_certify.py checks this against the config's own objective)."""
    from .api import run
    ov = dict(overrides)
    if seed is not None:
        ov["seed"] = int(seed)
    # one batch, no noise: the executor's run is then the deterministic method on a quadratic of
    # the class, the lower-bound instance of the trust checks (d ≥ S: every block non-empty)
    d = max(64, 2 * int(overrides.get("objective.stages", 0)))
    ov.update({"objective.name": "quadratic", "objective.generator": "spectrum", "objective.dim": d,
               "objective.samples": d, "objective.batch_size": d, "objective.L": float(L),
               "objective.mu": float(max(mu, 1e-3 * L)), "objective.grad_noise_std": 0.0,
               "log.every": 1, "log.delays": True, "log.iterates_every": 1, "log.progress": False})
    r = run(config, drop_unread=True, **ov)
    check_method(r.config)
    if r.status != "ok":
        raise ConfigError(f"the probe run of method.name = {r.config['method.name']} on the quadratic of the class "
                          f"{r.status}: {r.message}; lower method.lr")
    ks = np.asarray(r.series("k"), dtype=np.int64)
    stages = np.asarray(r.series("stage"), dtype=np.int64)[1:]
    K = int(r.config["method.updates"])
    S = int(r.config["objective.stages"])
    if ks[-1] != K:
        raise ConfigError(f"method.updates = {K}: the run stopped at k = {ks[-1]} (an sgd step is S = {S} block "
                          f"updates: give a multiple of S)")
    starts = ks[:-1]
    D = r.delays if r.delays is not None else np.zeros((K, S), dtype=np.int64)
    delays = np.asarray(D, dtype=np.int64)[starts]
    if (delays > starts[:, None]).any():
        raise ConfigError("the run's delay table reads before w_0; please report the config")
    return Pattern(delays, stages, starts, S, K, float(r.config["method.lr"]), r)


def replay(pattern: Pattern, grad, w0):
    """Run the pattern's method in numpy on the gradient oracle `grad`: the iterates w_k at every
    update's start, the last one, and the largest squared block gradient ‖P_j ∇f(z_k)‖² at a read
    point (§3's G²) (a slow, obviously correct twin of the PEP's dynamics, used by the
    lower-bound check and the soundness tests)."""
    S = pattern.S
    n = w0.size
    cuts = np.linspace(0, n, S + 1).round().astype(int) if n % S else np.arange(0, n + 1, n // S)
    hist = {0: w0.copy()}
    w = w0.copy()
    ws, g2 = [], 0.0
    for u, (k, s) in enumerate(zip(pattern.k, pattern.stages)):
        ws.append(w.copy())
        z = np.concatenate([hist[k - pattern.delays[u, j]][cuts[j]:cuts[j + 1]] for j in range(S)])
        g = grad(z)
        g2 = max(g2, max(float(g[cuts[j]:cuts[j + 1]] @ g[cuts[j]:cuts[j + 1]]) for j in range(S)))
        w = w.copy()
        if s < 0:
            w -= pattern.gamma * g
        else:
            w[cuts[s]:cuts[s + 1]] -= pattern.gamma * g[cuts[s]:cuts[s + 1]]
        k_next = pattern.k[u + 1] if u + 1 < len(pattern.k) else pattern.K
        for kk in range(k + 1, k_next + 1):
            hist[kk] = w  # an sgd step: the model is the same over its S block updates
    return ws, w, g2


def measure_value(pattern: Pattern, function_class: str, f, grad, w0, f_star, w_star=None, f_low=None,
                  with_G=False):
    """The certificate's measure of one run (normalised as the PEP is): nonconvex
    (1/K)Σ_k ‖∇f(w_k)‖² / (f(w_0) − f_low); convex f(w_K) − f_* over ‖w_0 − w_*‖². with_G: also
    the run's G² in the same unit (per f(w_0) − f_low), to tell whether it is in the class with G."""
    ws, wK, g2 = replay(pattern, grad, w0)
    if function_class == "nonconvex":
        weights = np.diff(np.append(pattern.k, pattern.K))
        total = sum(wt * float(grad(w) @ grad(w)) for wt, w in zip(weights, ws))
        delta0 = f(w0) - (f_star if f_low is None else f_low)
        return (total / pattern.K / delta0, g2 / delta0) if with_G else total / pattern.K / delta0
    return (f(wK) - f_star) / float((w0 - w_star) @ (w0 - w_star))


def random_quadratic(d: int, L: float, mu: float, rng) -> dict:
    """f(w) = ½ (w − w_*)ᵀ H (w − w_*), H = Q diag(λ) Qᵀ with Q a random rotation (couples the
    blocks, which is what makes stale reads matter), λ in [μ, L] with both ends attained."""
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    lam = rng.uniform(mu, L, d)
    lam[0], lam[-1] = L, mu
    H = (Q * lam) @ Q.T
    ws = rng.standard_normal(d)
    return {"H": H, "w_star": ws, "f": lambda w: 0.5 * (w - ws) @ H @ (w - ws), "grad": lambda w: H @ (w - ws),
            "f_star": 0.0}


def lower_bound(pattern: Pattern, function_class: str, L: float, mu: float, trials: int = 8, seed: int = 0,
                G: float | None = None):
    """The largest measured value of the method, same pattern, on quadratics of the class: the
    executor's own run (it ran on a spectrum quadratic of the class) and `trials` numpy replays.
    With G (nonconvex): only replays whose G² per unit Δ₀ is at most G² count, on quadratics
    with λ_max ≤ G²/2.2 (‖∇f‖² ≤ 2λ_max f for a convex quadratic keeps most of them inside)."""
    r = pattern.run
    values = {}
    if r is not None and G is None:
        m = r.metrics
        rows = m[m["k"] < pattern.K]
        if function_class == "nonconvex":
            weights = np.diff(np.append(rows["k"].to_numpy(), pattern.K))
            values["executor run (spectrum quadratic)"] = float((weights * rows["grad_norm_sq"]).sum() / pattern.K
                                                                / m["subopt"].iloc[0])
        else:
            w0 = r.iterates[0]
            from .api import objective
            o = objective(None, **_probe_keys(r))
            dist = float((w0 - o["w_star"]) @ (w0 - o["w_star"]))
            values["executor run (spectrum quadratic)"] = float(m["subopt"].iloc[-1]) / dist
    rng = np.random.default_rng(seed)
    d = 3 * pattern.S
    best, inside = 0.0, 0
    for _ in range(trials):
        q = random_quadratic(d, L if G is None else min(L, G * G / 2.2), mu, rng)
        w0 = q["w_star"] + rng.standard_normal(d)
        if G is None:
            best = max(best, measure_value(pattern, function_class, q["f"], q["grad"], w0, 0.0, q["w_star"]))
            inside += 1
            continue
        v, g2 = measure_value(pattern, function_class, q["f"], q["grad"], w0, 0.0, q["w_star"], with_G=True)
        if g2 <= G * G:
            best, inside = max(best, v), inside + 1
    values[f"numpy replay, max of {inside} random quadratics in the class"] = best
    return max(values.values()), values


def _probe_keys(r) -> dict:
    keep = ("seed", "objective.", "method.", "delay.", "costs.")
    return {k: v for k, v in r.config.items() if k.startswith(keep) and not k.startswith("log.")}


def build_pep(pattern: Pattern, function_class: str, L: float, mu: float = 0.0, measure: str = "mean",
              initial: str = "all", G: float | None = None):
    """The PEP of the pattern (module docstring). measure "mean" is the certificate's; "min"
    (min_{k≤K} ‖∇f(w_k)‖²) with initial "last" (f(w_0) − f(w_K) ≤ 1) is PEPit's own
    nonconvex gradient-descent example, kept for the known-value test. Returns (problem, points)."""
    from PEPit import PEP
    from PEPit.functions import SmoothFunction, SmoothStronglyConvexFunction, SmoothConvexFunction
    S, gamma = pattern.S, pattern.gamma
    problem = PEP()
    part = problem.declare_block_partition(d=S) if S > 1 else None
    if function_class == "nonconvex":
        func = problem.declare_function(SmoothFunction, L=L)
    elif function_class == "block-smooth-convex":
        # convex and L-smooth along each block (coordinate descent's class); PEPit's "Cheap"
        # conditions are necessary, not sufficient, for interpolation: the value is an upper bound
        from PEPit.functions import BlockSmoothConvexFunctionCheap
        func = problem.declare_function(BlockSmoothConvexFunctionCheap, L=[L] * S, partition=part or
                                        problem.declare_block_partition(d=1))
    elif function_class == "convex" and mu == 0:
        func = problem.declare_function(SmoothConvexFunction, L=L)
    else:
        func = problem.declare_function(SmoothStronglyConvexFunction, mu=mu, L=L)

    def block(p, j):
        return part.get_block(p, j) if part is not None else p

    w0 = problem.set_initial_point()
    # blocks[v][j] = P_j w_v for v = 0 and the versions v that wrote block j, by linearity from
    # the partitioned leaves w_0 and the gradients
    blocks = {0: [block(w0, j) for j in range(S)]}
    # A read point is named by the version of each block it takes, canonicalised to the version
    # that block last changed at (canon[v][j]). Two reads of equal points must be one oracle call:
    # as two, the interpolation conditions between them force equal values and gradients by a
    # pair of opposite inequalities, the SDP loses its interior and the solver stalls
    # ("AlmostSolved", optimal_inaccurate)
    canon = {0: (0,) * S}
    oracle = {}  # canonical read point → (gradient, value)

    def call(versions):
        key = tuple(canon[v][j] for j, v in enumerate(versions))
        if key not in oracle:
            x = blocks[key[0]][0]
            for j in range(1, S):
                x = x + blocks[key[j]][j]
            oracle[key] = func.oracle(x)
        return key, oracle[key]

    values, grads_sq, reads = [], [], set()
    for u, (k, s) in enumerate(zip(pattern.k, pattern.stages)):
        k, s = int(k), int(s)
        _, (g_w, f_w) = call((k,) * S)
        values.append(f_w)
        k_next = int(pattern.k[u + 1]) if u + 1 < len(pattern.k) else pattern.K
        grads_sq.append((k_next - k, g_w ** 2))
        key, (g, f_z) = call(tuple(int(k - pattern.delays[u, j]) for j in range(S)))
        reads.add(key)
        values.append(f_z)
        written = [s < 0 or s == j for j in range(S)]
        blocks[k + 1] = [blocks[canon[k][j]][j] - gamma * block(g, j) if written[j] else None for j in range(S)]
        # an sgd step spans S block updates over which the model does not change
        for kk in range(k + 1, k_next + 1):
            canon[kk] = tuple(k + 1 if written[j] else canon[k][j] for j in range(S))
    _, (g_K, f_K) = call((pattern.K,) * S)
    f_0 = oracle[(0,) * S][1]
    if G is not None:
        # §3's assumption, in the unit of the normalisation Δ₀ = 1: ‖∇_j f(z_k)‖ ≤ G at every
        # read point and block (the theorem asks it of the sampled block gradients it uses)
        for key in reads:
            for j in range(S):
                problem.add_constraint(block(oracle[key][0], j) ** 2 <= G * G)
    if function_class == "nonconvex":
        if initial == "last":
            problem.set_initial_condition(f_0 - f_K <= 1)
        else:
            # inf f ≥ f(w_0) − Δ₀ at every point p the PEP evaluates, through the descent step from
            # p: f_low ≤ f(p − ∇f(p)/L) ≤ f(p) − ‖∇f(p)‖²/(2L) holds for every L-smooth f bounded by
            # f_low (the bare f(p) ≥ f_low lets the PEP's gradients exceed 2L(f(p) − f_low))
            for g, v in oracle.values():
                problem.set_initial_condition(f_0 - v + (0.5 / L) * g ** 2 <= 1)
        if measure == "min":
            for _, gsq in grads_sq:
                problem.set_performance_metric(gsq)
            problem.set_performance_metric(g_K ** 2)
        else:
            total = grads_sq[0][0] * grads_sq[0][1]
            for wt, gsq in grads_sq[1:]:
                total = total + wt * gsq
            problem.set_performance_metric(total * (1.0 / pattern.K))
    else:
        xs = func.stationary_point()
        fs = func(xs)
        problem.set_initial_condition((w0 - xs) ** 2 <= 1)
        problem.set_performance_metric(f_K - fs)
    return problem, {"oracle": oracle, "reads": reads, "block": block}


def _checks(problem, primal: float) -> dict:
    """The numbers PEPit's check_feasibility prints, returned instead (PEPit 0.5.1, pep.py)."""
    from PEPit.point import Point
    from PEPit.tools.dict_operations import prune_dict, symmetrize_dict
    cons = problem._list_of_prepared_constraints
    out = {"gram_min_eig": float(np.linalg.eigvalsh(problem.G_value).min())}
    out["primal_violation"] = float(max([c.eval() for c in cons if c.equality_or_inequality == "inequality"] +
                                        [abs(c.eval()) for c in cons if c.equality_or_inequality == "equality"]))
    out["dual_residual_min_eig"] = float(np.linalg.eigvalsh(problem.residual).min())
    ineq = [c.eval_dual() for c in cons if c.equality_or_inequality == "inequality"]
    out["dual_multiplier_min"] = float(min(ineq)) if ineq else 0.0
    comb = -np.dot(Point.list_of_leaf_points, np.dot(problem.residual, Point.list_of_leaf_points))
    for c in cons:
        comb += c.eval_dual() * c.expression
    parts = prune_dict(symmetrize_dict((problem.objective - comb).decomposition_dict))
    dual = float(parts.get(1, 0.0))
    out["proof_remainder"] = float(np.sum(np.abs([v for key, v in parts.items() if key != 1])))
    out["dual_value"] = dual
    out["duality_gap"] = dual - primal
    return out


# Clarabel's settings tried in turn when it stops with a numerical error or inaccurate (block
# partitions make the KKT systems nearly singular): more static regularisation, then shorter
# steps. Each answer still has to pass every check; the settings used are reported.
CLARABEL_RETRIES = ({}, {"static_regularization_constant": 1e-7}, {"max_step_fraction": 0.8})


def solve(pattern: Pattern, function_class: str, L: float, mu: float = 0.0, solver: str = "clarabel",
          tol: float = 1e-6, solver_options: dict | None = None, measure: str = "mean", initial: str = "all",
          accept_inaccurate: bool = False, G: float | None = None) -> dict:
    """Build and solve one PEP; the trust checks on the solver's answer (not the lower bound).
    Clarabel without solver_options tries CLARABEL_RETRIES in turn and keeps the first answer
    that passes every check (else the last one, refused)."""
    _need_pepit()
    ladder = CLARABEL_RETRIES if solver == "clarabel" and solver_options is None else (solver_options or {},)
    spent, res, error = 0.0, None, None
    for options in ladder:
        t0 = time.perf_counter()
        try:
            res = _solve_once(pattern, function_class, L, mu, solver, tol, options, measure, initial, accept_inaccurate,
                              G)
        except ConfigError as e:
            error, res = e, None
            spent += time.perf_counter() - t0
            continue
        spent += time.perf_counter() - t0  # the build and the checks too: what a certificate costs
        res["solve_seconds"], res["solver_settings"] = spent, repr(options)
        if "refused" not in res:
            return res
    if res is None:
        raise error
    return res


def _solve_once(pattern, function_class, L, mu, solver, tol, solver_options, measure, initial, accept_inaccurate,
                G=None):
    problem, pts = build_pep(pattern, function_class, L, mu, measure, initial, G)
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():  # cvxpy's "Solution may be inaccurate": the status says it, and is checked
            warnings.simplefilter("ignore", UserWarning)
            primal = problem.solve(wrapper="cvxpy", solver=solver.upper(), verbose=0, return_primal_or_dual="primal",
                                   **(solver_options or {}))
    except Exception as e:  # cvxpy's SolverError: the solver gave up
        other = "solver=clarabel" if solver == "scs" else "solver=scs (flagged, tol 1e-3)"
        raise ConfigError(f"certify: solver {solver} failed ({type(e).__name__}: {str(e).splitlines()[0]}); "
                          f"try {other} or a smaller method.updates") from None
    seconds = time.perf_counter() - t0
    status = problem.wrapper.prob.status
    res = {"status": status, "solver": solver, "solve_seconds": seconds, "primal_value": primal,
           "gram_size": int(problem.G_value.shape[0]) if getattr(problem, "G_value", None) is not None else 0,
           "constraints": len(problem._list_of_prepared_constraints), "tol": tol}
    if primal is None or status not in ("optimal", "optimal_inaccurate"):
        res["refused"] = f"solver status '{status}' (not 'optimal')"
        return res
    res.update(_checks(problem, primal))
    scale = max(1.0, abs(res["dual_value"]))
    failed = [name for name, bad in (
        # Clarabel's "optimal_inaccurate" met only its reduced tolerances (5e-5): refused unless
        # asked for, and then only when the independent checks below pass at tol (flagged)
        (f"solver status '{status}' (not 'optimal'; accept_inaccurate=True lets the checks decide)",
         status != "optimal" and not accept_inaccurate),
        ("Gram matrix not PSD", res["gram_min_eig"] < -tol * scale),
        ("primal constraints violated", res["primal_violation"] > tol * scale),
        ("dual residual not PSD", res["dual_residual_min_eig"] < -tol * scale),
        ("negative inequality multipliers", res["dual_multiplier_min"] < -tol * scale),
        ("proof reconstruction leaves a remainder", res["proof_remainder"] > tol * scale),
        ("primal and dual values differ", abs(res["duality_gap"]) > tol * scale)) if bad]
    if failed:
        res["refused"] = f"{', '.join(failed)} beyond tol = {tol:g}"
    res["worst_case"] = res["dual_value"]  # the proof's value: an upper bound once the dual checks pass
    if "refused" not in res and function_class == "nonconvex" and measure == "mean":
        # G of the §3 bound at the worst-case instance: its largest block gradient at a read point
        G2 = 0.0
        for key in pts["reads"]:
            g = pts["oracle"][key][0]
            for j in range(pattern.S):
                v = pts["block"](g, j).eval()
                G2 = max(G2, float(v @ v))
        res["G_worst_sq"] = G2
    return res


def paper_bound(S, K, gamma, L, delta, G2, Delta0=1.0) -> dict:
    """§3's bound 2SΔ₀/(γK) + γSLG² + γ²L²δ²G², term by term."""
    t = {"bound_opt": 2 * S * Delta0 / (gamma * K), "bound_stoch": gamma * S * L * G2,
         "bound_stale": gamma ** 2 * L ** 2 * delta ** 2 * G2}
    t["bound"] = sum(t.values())
    return t


def certify(config=None, out=None, *, function_class: str = "nonconvex", L: float = 1.0, mu: float = 0.0,
            solver: str = "clarabel", seeds: int | None = None, tol: float | None = None,
            solver_options: dict | None = None, lower_bound_trials: int = 8, accept_inaccurate: bool = False,
            G: float | None = None, **overrides) -> dict:
    """Certify the worst case of the configured method over a function class (module docstring).

    config, **overrides: as stale.run's (method, delay model or schedule, S, K = method.updates,
    γ = method.lr, seed). function_class: nonconvex | convex | strongly-convex (μ > 0); L, μ: the
    class's constants. solver: clarabel (default) or scs (flagged). seeds: None = the realised
    pattern of the config's seed; N = the max over the patterns of seeds seed..seed+N−1. tol: the
    trust checks' tolerance (default 1e-6; 1e-3 for scs). G (nonconvex only): add §3's assumption
    ‖∇_j f(z_k)‖ ≤ G at every read point, in units where Δ₀ = 1 (G² ≤ 2LΔ₀ always holds: a
    larger G changes nothing); the bound then uses this G. accept_inaccurate: take a solver status
    "optimal_inaccurate" when every independent check passes at tol (flagged in `status`).
    out: an HDF5 certificate file.
    Returns a dict; a certificate that fails a check raises stale.ConfigError in one line.
    """
    _need_pepit()
    if function_class not in CLASSES:
        raise ConfigError(f"function_class = {function_class!r}: not a class; valid: {', '.join(CLASSES)}")
    if solver not in SOLVERS:
        raise ConfigError(f"solver = {solver!r}: not supported; valid: {', '.join(SOLVERS)} (clarabel is the default)")
    if not (L > 0) or not (0 <= mu < L):
        raise ConfigError(f"L = {L}, mu = {mu}: the class needs 0 ≤ μ < L")
    if function_class == "strongly-convex" and mu <= 0:
        raise ConfigError("function_class = strongly-convex needs mu > 0 (mu=0 is the class convex)")
    if function_class != "strongly-convex" and mu != 0:
        raise ConfigError(f"mu = {mu}: only function_class = strongly-convex reads mu; set it or drop mu")
    if G is not None and (function_class != "nonconvex" or not G > 0):
        raise ConfigError(f"G = {G}: the bounded block gradient is an assumption of the nonconvex class; give G > 0 "
                          f"with function_class=nonconvex, or drop G")
    if tol is None:
        tol = 1e-3 if solver == "scs" else 1e-6
    if seeds is not None and (int(seeds) != seeds or seeds < 1):
        raise ConfigError(f"seeds = {seeds}: give a count ≥ 1, or None for the config's own seed")
    first = read_pattern(config, L=L, mu=mu, **overrides)
    base = int(first.run.config["seed"])
    seed_list = [base] if seeds is None else [base + i for i in range(int(seeds))]
    rest = {k: v for k, v in overrides.items() if k != "seed"}
    per_seed = []
    for s in seed_list:
        pat = first if s == base else read_pattern(config, L=L, mu=mu, seed=s, **rest)
        res = solve(pat, function_class, L, mu, solver, tol, solver_options, accept_inaccurate=accept_inaccurate, G=G)
        method = pat.run.config["method.name"]
        if "refused" in res:
            raise ConfigError(f"certify: {method}, seed {pat.run.config['seed']}: certificate refused: {res['refused']} "
                              f"(solver {solver}{', try solver=clarabel' if solver == 'scs' else ''})")
        lb, lb_parts = lower_bound(pat, function_class, L, mu, trials=lower_bound_trials, G=G)
        res["lower_bound"], res["lower_bound_parts"] = lb, lb_parts
        if res["worst_case"] < lb - tol * max(1.0, lb):
            raise ConfigError(f"certify: {method}: certificate refused: worst case {res['worst_case']:.6g} is below a run "
                              f"of the same pattern on a quadratic of the class ({lb:.6g}); the PEP or the solver is wrong")
        res["seed"], res["pattern"] = int(pat.run.config["seed"]), pat
        per_seed.append(res)
    top = max(per_seed, key=lambda r: r["worst_case"])
    pat = top["pattern"]
    cfg = pat.run.config
    randomized = cfg["method.name"] in ("rpd", "bcd") or cfg.get("delay.name") in ("uniform", "geometric")
    if seeds is None:
        what = (f"realised pattern of seed {top['seed']}" if randomized else "deterministic pattern") + \
               ": worst case over the class for this one read pattern and block order"
    else:
        what = (f"max over {len(seed_list)} sampled patterns (seeds {seed_list[0]}..{seed_list[-1]}) of their worst "
                f"cases: a bound for these patterns only, not an expectation")
    result = {"method": cfg["method.name"], "function_class": function_class, "L": L, "mu": mu,
              "S": pat.S, "K": pat.K, "gamma": pat.gamma, "delta": pat.delta, "certifies": what,
              "measure": ("(1/K) Σ_{k<K} ‖∇f(w_k)‖² per unit Δ₀ = f(w_0) − f_low" if function_class == "nonconvex"
                          else "f(w_K) − f_* per unit ‖w_0 − w_*‖²"),
              "worst_case": top["worst_case"], "primal_value": top["primal_value"],
              "solver": solver, "solver_flag": "SCS (first-order, low accuracy): on request only" if solver == "scs" else "",
              "status": top["status"], "tol": tol, "solve_seconds": sum(r["solve_seconds"] for r in per_seed),
              "lower_bound": top["lower_bound"], "seed": top["seed"], "seeds": [r["seed"] for r in per_seed],
              "worst_case_per_seed": [r["worst_case"] for r in per_seed],
              "gram_size": top["gram_size"], "constraints": top["constraints"],
              "solver_settings": top.get("solver_settings", ""),
              "delays": pat.delays, "stages": pat.stages, "k": pat.k}
    for key in ("gram_min_eig", "primal_violation", "dual_residual_min_eig", "dual_multiplier_min",
                "proof_remainder", "duality_gap"):
        result[key] = top[key]
    if function_class == "nonconvex":
        # the bound at the same constants, Δ₀ = 1, δ = the pattern's largest delay, G² = the
        # worst-case instance's largest squared block gradient at a read point; the stochastic
        # term is §3's for random stage draws and mini-batches, which a fixed-pattern,
        # full-gradient certificate does not have: `bound` is the deterministic sum
        # bound_opt + bound_stale, `bound_full` adds it (docs/theory.md §12)
        b = paper_bound(pat.S, pat.K, pat.gamma, L, pat.delta, top["G_worst_sq"] if G is None else G * G)
        result.update(b)
        result["G"] = G if G is not None else math.nan
        result["G_source"] = ("given: ‖∇_j f(z_k)‖ ≤ G is a constraint of the PEP" if G is not None else
                              "the worst-case instance's largest block gradient at a read point")
        result["bound_full"] = b["bound"]
        result["bound"] = b["bound_opt"] + b["bound_stale"]
        result["G_worst_sq"] = top["G_worst_sq"]
    if out is not None:
        write_certificate(out, result, cfg)
        result["path"] = os.fspath(out)
    return result


def write_certificate(path, result: dict, config: dict) -> None:
    """The certificate as HDF5, the run files' way: scalars and strings as attributes of the root,
    the pattern as datasets, the resolved config as /config text; written under PATH.tmp and
    renamed, so a certificate file is complete or absent."""
    import h5py
    path = os.fspath(path)
    tmp = path + ".tmp"
    with h5py.File(tmp, "w") as f:
        for k, v in result.items():
            if isinstance(v, (int, float, np.integer, np.floating, str, bool)):
                f.attrs[k] = v
        for k in ("delays", "stages", "k", "seeds", "worst_case_per_seed"):
            f[k] = np.asarray(result[k])
        f.attrs["config"] = "\n".join(f"{k} = {v!r}" for k, v in sorted(config.items()))
        f.attrs["kind"] = "stale certificate"
    os.replace(tmp, path)


def _cli_value(text: str):
    """A key=value's value as the CLI reads it: a TOML value (8, 0.5, true, "x"), else the bare string."""
    import tomllib
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def main(argv=None) -> int:
    """`stale certify CONFIG [key=value ...] [options]` (scripts/certify.py; the C++ subcommand
    src/cli/certify_command.cpp execs it): prints the certificate, writes it with --out; exit 2
    with one line on bad input, a missing dependency or a refused certificate."""
    import argparse
    import sys
    p = argparse.ArgumentParser(prog="stale certify", description="PEP worst case of a config's read pattern "
                                "over a function class (docs/theory.md §12)")
    p.add_argument("config", help="a TOML config, as `stale run` takes it ('-' for the defaults)")
    p.add_argument("assign", nargs="*", metavar="key=value", help="config overrides, as `stale run` takes them")
    p.add_argument("--class", dest="function_class", default="nonconvex", help=f"one of {', '.join(CLASSES)}")
    p.add_argument("--L", type=float, default=1.0, help="smoothness constant of the class (default 1)")
    p.add_argument("--mu", type=float, default=0.0, help="strong convexity (strongly-convex only)")
    p.add_argument("--solver", default="clarabel", help="clarabel (default) or scs (flagged)")
    p.add_argument("--G", type=float, default=None,
                   help="nonconvex: add §3's ‖∇_j f(z_k)‖ ≤ G at every read point (units of Δ₀ = 1)")
    p.add_argument("--seeds", type=int, default=None, help="certify the patterns of N seeds and report their max")
    p.add_argument("--tol", type=float, default=None, help="tolerance of the trust checks (1e-6; scs 1e-3)")
    p.add_argument("--accept-inaccurate", action="store_true",
                   help="take status optimal_inaccurate when every independent check passes at --tol (flagged)")
    p.add_argument("--out", "-o", default=None, help="HDF5 certificate file to write")
    a = p.parse_args(argv)
    overrides = {}
    for item in a.assign:
        if "=" not in item:
            print(f"error: '{item}': overrides are key=value (e.g. method.updates=16)", file=sys.stderr)
            return 2
        k, v = item.split("=", 1)
        overrides[k.strip()] = _cli_value(v.strip())
    try:
        c = certify(None if a.config == "-" else a.config, a.out, function_class=a.function_class, L=a.L, mu=a.mu,
                    solver=a.solver, seeds=a.seeds, tol=a.tol, accept_inaccurate=a.accept_inaccurate, G=a.G,
                    **overrides)
    except ConfigError as e:
        print(f"error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    print(f"certificate: {c['method']}, S = {c['S']}, K = {c['K']}, γ = {c['gamma']:g}, δ = {c['delta']}, "
          f"class {c['function_class']} (L = {c['L']:g}{', μ = %g' % c['mu'] if c['mu'] else ''})")
    print(f"  certifies: {c['certifies']}")
    print(f"  worst case of {c['measure']}: {c['worst_case']:.6g}   (runs on quadratics of the class: "
          f"{c['lower_bound']:.6g})")
    if "bound" in c:
        G2 = c["G"] ** 2 if c["G"] == c["G"] else c["G_worst_sq"]
        print(f"  §3 bound at these constants (G² = {G2:.4g}, {c['G_source']}): "
              f"{c['bound']:.6g} = 2SΔ₀/(γK) {c['bound_opt']:.4g} + γ²L²δ²G² {c['bound_stale']:.4g} "
              f"(with the stochastic term γSLG²: {c['bound_full']:.6g})")
    print(f"  solver {c['solver']}{' [' + c['solver_flag'] + ']' if c['solver_flag'] else ''}, status {c['status']}, "
          f"settings {c['solver_settings']}, {c['solve_seconds']:.2f} s, Gram {c['gram_size']}×{c['gram_size']}, {c['constraints']} constraints; "
          f"checks within tol = {c['tol']:g}: gap {c['duality_gap']:.1e}, proof remainder {c['proof_remainder']:.1e}, "
          f"primal violation {c['primal_violation']:.1e}, min eig Gram {c['gram_min_eig']:.1e}")
    if a.out:
        print(f"  written: {a.out}")
    return 0
