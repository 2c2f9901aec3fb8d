"""The §3 bound against the measured (1/K)Σ_{k<K}‖∇f(w_k)‖², for every method of a sweep
(docs/theory.md §3: 2SΔ₀/(γK) + γSLG² + γ²L²δ²G², each run with its own γ, S, L, δ and
running G, as its /metrics rows hold them).

Every run of a sweep is read, whatever its method: RPD with its delay model's δ, PipeDream,
PACI, 2BW, the flush methods and LocalSGD with the δ of their simulated schedule
(/theory/delta). A run is checked at every logged K when the bound's assumptions hold for it:
γ ≤ 1/L, the exact running mean (/theory/exact_mean; older files: log.exact_mean not false) and
not diverged. The others are kept and counted by reason, never dropped silently.

A run whose objective has no certified L (the char-level GPT) has its bound evaluated with the
estimate of L along the run (/theory/L_source "estimated …", src/theory/smoothness_estimator.hpp):
a LOWER estimate of L, so such a bound is an estimate, not a certificate, and a violation of it
may be the estimate's fault. Every table and legend here says "estimated L" for those runs.

**Which checks could have failed** (issue 53; `check_labels`). The bound is evaluated with the
running G_K, the largest sampled block-gradient norm of the run so far, and its G-terms are

    γSLG_K² + γ²L²δ²G_K² = (c + c²δ²/S)·S·G_K²,      c = γL.

Write C_K = S·G_K² (the ceiling), β_K = bound_K / C_K and ρ_K = measured_K / C_K. A violation
is ρ_K > β_K, exactly. The left side is (1/K)Σ‖∇f(w_k)‖² with ‖∇f(w)‖² = Σ_s ‖∇_s f(w)‖²: as long
as G_K bounds every block of the full gradient at the logged iterates, ρ_K ≤ 1 — the ceiling that
the G plugged into the bound sets for the quantity it is compared with. So where β_K ≥ 1 (for
c + c²δ²/S ≥ 1 at every K, and at small K also through the optimisation term) a violation
needs the left side above its own ceiling: the check passes by construction, whatever the
staleness did. It is **vacuous** there, and **informative** where β_K < 1 or where the measured
mean is within reach of the ceiling, ρ_K ≥ REACH = 1/2. The ceiling is not a theorem (G_K is
read at the stale points z_k with one mini-batch, the left side at w_k with the full gradient),
so a run whose left side comes within a factor 2 of it (√2 on the gradient norm) does not rest on
it; the largest ρ the committed audits reached is 0.133 (issue 53), so no label moves for any
REACH in (0.133, 1]. A violation is always informative (ρ_K > β_K ≥ 1 > REACH). Structural
properties (γ ≤ 1/L, δ = the largest delay read, crossing counts) are not bound checks and are
never counted as informative. A verdict that rests on no informative check is "not informative",
never "holds" (`bound_verdict`).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np

from .errors import AnalysisError
from .runs import divergence_reason, load_run, number
from .sweeps import read_index


REACH = 0.5  # ρ_K = measured/(S·G_K²) from which a check counts as informative whatever β_K (docstring)


def check_labels(measured, bound, G, S):
    """Per logged K: True where the check measured ≤ bound could have failed (informative), False
    where it passes by construction (vacuous): informative ⇔ bound < S·G_K² or measured ≥ REACH·S·G_K²
    (module docstring). measured, bound, G: the rows' (1/K)Σ‖∇f(w_k)‖², /metrics/bound and the running
    /metrics/G; S the number of blocks the bound used. A row without a positive finite G cannot be
    shown to be informative and is labelled vacuous."""
    measured, bound, G = (np.asarray(a, float) for a in (measured, bound, G))
    ceiling = float(S) * G * G
    with np.errstate(all="ignore"):
        ok = np.isfinite(ceiling) & (ceiling > 0)
        return ok & ((bound < ceiling) | (measured >= REACH * ceiling))


def bound_verdict(informative: int, vacuous: int, violations: int) -> str:
    """The verdict cell of a group of bound checks, with the number of checks it rests on."""
    if violations:
        return f"**violated** at {violations} of {informative} informative checks"
    if informative == 0:
        return f"not informative (0 of {vacuous} checks could fail)"
    return f"holds ({informative} informative checks; {vacuous} vacuous)"


@dataclass
class BoundRun:
    sweep: str
    run: str                  # the index's run (its config hash)
    axes: dict                # the index row's varying keys
    method: str
    delta: float              # δ of the bound (/theory/delta)
    lr: float
    within: bool              # γ ≤ 1/L (/theory/lr_within_1_over_L)
    exact_mean: bool          # the running mean is exact, not sampled at logged steps
    diverged: str | None      # why the run counts as diverged (runs.divergence_reason), or None
    k: np.ndarray = field(repr=False)         # logged k > 0 with a finite bound
    measured: np.ndarray = field(repr=False)  # (1/K)Σ‖∇f(w_k)‖² at those k
    bound: np.ndarray = field(repr=False)     # the bound at those k
    terms: dict = field(default_factory=dict)  # bound_opt, bound_stoch, bound_stale at the last row
    L: float = math.nan       # the L the bound used (/theory/L)
    L_estimated: bool = False  # that L is the estimate along the run (/theory/bound_uses_estimated_L)
    S: float = math.nan       # blocks of the bound (/theory/S)
    G: np.ndarray = field(default=None, repr=False)  # the running G at those k (/metrics/G); None: not logged
    same_as: str | None = None  # an earlier run of the sweep this one repeats bit for bit under another seed

    @property
    def informative(self) -> np.ndarray:
        """Per logged K: whether the check could have failed there (check_labels); all False
        where the file has no /metrics/G (nothing shows that the bound could be crossed)."""
        if self.G is None:
            return np.zeros(len(self.k), bool)
        return check_labels(self.measured, self.bound, self.G, self.S)

    @property
    def informative_checks(self) -> int:
        return int(self.informative.sum()) if self.checked else 0

    @property
    def vacuous_checks(self) -> int:
        return int(len(self.k) - self.informative.sum()) if self.checked else 0

    @property
    def checked(self) -> bool:
        """The bound's assumptions hold: the run is compared with it."""
        return self.within and self.exact_mean and self.diverged is None and len(self.k) > 0

    @property
    def why_not_checked(self) -> str:
        if not self.within:
            return "γ > 1/L"
        if self.diverged is not None:
            return "diverged"
        if not self.exact_mean:
            return "sampled mean"
        return "no logged bound" if len(self.k) == 0 else ""

    def ratio(self) -> np.ndarray:
        with np.errstate(all="ignore"):
            return self.measured / self.bound

    @property
    def final_ratio(self) -> float:
        r = self.ratio()
        return float(r[-1]) if len(r) else math.nan

    @property
    def worst(self) -> tuple[int, float]:
        """(k, measured/bound) where the ratio is largest; (−1, nan) without logged rows."""
        r = self.ratio()
        if not len(r) or not np.any(np.isfinite(r)):
            return -1, math.nan
        i = int(np.nanargmax(r))
        return int(self.k[i]), float(r[i])

    @property
    def violated(self) -> bool:
        return bool(np.any(self.ratio() > 1))

    @property
    def violating_checks(self) -> int:
        return int(np.sum(self.ratio() > 1))


def _flag(v, default=True) -> bool:
    if v is None:
        return default
    if isinstance(v, str):
        return v.strip().lower() not in ("0", "false", "no", "")
    if np.size(v) != 1:  # an array where a flag belongs: a damaged file
        return default
    return bool(np.asarray(v).reshape(()))


def L_estimated(theory: dict) -> bool:
    """Whether a run's bound used the estimate of L along the run, not a certified L."""
    if "bound_uses_estimated_L" in theory:
        return _flag(theory["bound_uses_estimated_L"], default=False)
    return str(theory.get("L_source", "certified")).startswith("estimated")


def L_text(runs) -> str:
    """'certified', 'estimated' or 'mixed (2 of 5 estimated)': the L of a group of runs' bounds."""
    n = sum(r.L_estimated for r in runs)
    return "certified" if n == 0 else "estimated" if n == len(runs) else f"mixed ({n} of {len(runs)} estimated)"


def exact_mean_of(run) -> bool:
    """/theory/exact_mean (what the run did), else the config key (files older than the attribute;
    there log.exact_mean = auto was exact for the linear models, sampled for charlm)"""
    th = run.theory
    if "exact_mean" in th:
        return _flag(th["exact_mean"])
    v = run.flat.get("log.exact_mean", "auto")
    if str(v).strip().lower() == "auto":
        return str(run.flat.get("objective.name", "")) != "charlm"
    return _flag(v)


def bound_runs(sweep_dirs) -> list[BoundRun]:
    """Every finished (ok or diverged) run of the sweeps, every method, with its bound series."""
    out = []
    for d in sweep_dirs:
        rows = read_index(d)
        axes = [c for c in (rows[0] if rows else {}) if "." in c or c == "seed"]
        for row in rows:
            if row["status"] not in ("ok", "diverged"):
                continue
            run = load_run(os.path.join(d, row["path"]))
            th = run.theory
            m = run.metrics
            k = run.series("k")
            b = run.series("bound") if "bound" in m else np.full(len(k), math.nan)
            g = run.series("grad_norm_sq_mean")
            G = run.series("G") if "G" in m else None
            if not len(k) == len(b) == len(g):
                raise AnalysisError(f"{run.path}: /metrics/k, bound and grad_norm_sq_mean differ in length "
                                    "(a damaged run file?)")
            ok = np.isfinite(b) & (k > 0)
            terms = {t: float(m[t][-1]) if t in m and len(m[t]) else math.nan
                     for t in ("bound_opt", "bound_stoch", "bound_stale")}
            out.append(BoundRun(
                sweep=d, run=row["run"], axes={a: row[a] for a in axes},
                method=str(run.flat.get("method.name", "?")),
                delta=number(run.path, th.get("delta", math.nan), "/theory delta"), lr=run.lr,
                within=_flag(th.get("lr_within_1_over_L"), default=False),
                exact_mean=exact_mean_of(run),
                diverged=divergence_reason(run), k=k[ok], measured=g[ok], bound=b[ok], terms=terms,
                L=float(th.get("L", math.nan)), L_estimated=L_estimated(th),
                S=float(th.get("S", run.flat.get("objective.stages", math.nan))),
                G=None if G is None else G[ok]))
    mark_seed_replicates(out)
    return out


def mark_seed_replicates(runs: list[BoundRun]) -> None:
    """Sets same_as on a run that differs from an earlier run of its sweep only in the seed and
    whose logged k, mean and bound are equal bit for bit: a deterministic method on fixed data
    (PipeDream's cyclic batches, no random delays) runs the same run for every seed, which a
    count of seeds would take for independent evidence (issue 51, item 6)."""
    first: dict = {}
    for r in runs:
        key = (r.sweep, tuple(sorted((k, str(v)) for k, v in r.axes.items() if k != "seed")),
               r.k.tobytes(), r.measured.tobytes(), r.bound.tobytes())
        if key in first:
            r.same_as = first[key]
        else:
            first[key] = r.run


def _number(v: float) -> str:
    return f"{int(v)}" if math.isfinite(v) and v == int(v) else f"{v:g}"


def delta_text(deltas) -> str:
    """'δ = 72', 'δ ∈ {8, 60, 420}', or 'δ = 4…1024 (9 values)' for many: a legend's δ of a method."""
    ds = sorted({float(x) for x in deltas if math.isfinite(float(x))})
    if not ds:
        return "δ unknown"
    if len(ds) == 1:
        return f"δ = {_number(ds[0])}"
    if len(ds) <= 4:
        return "δ ∈ {" + ", ".join(_number(x) for x in ds) + "}"
    return f"δ = {_number(ds[0])}…{_number(ds[-1])} ({len(ds)} values)"


def by_method(runs: list[BoundRun]) -> dict[str, list[BoundRun]]:
    out: dict[str, list[BoundRun]] = {}
    for r in runs:
        out.setdefault(r.method, []).append(r)
    return dict(sorted(out.items()))


def method_table(runs: list[BoundRun]) -> list[dict]:
    """One row per method: its δ, how many runs were read, checked and left out (by reason),
    violations, the largest and median measured/bound at the final K of the checked runs, and how
    many of the checks could have failed (informative) or passed by construction (vacuous), with
    the verdict they support (bound_verdict)."""
    table = []
    for method, rs in by_method(runs).items():
        checked = [r for r in rs if r.checked]
        ratios = [r.final_ratio for r in checked if math.isfinite(r.final_ratio)]
        table.append({
            "method": method, "delta": delta_text(r.delta for r in rs), "L": L_text(rs), "runs": len(rs),
            "checked": len(checked),
            "lr_above_1_over_L": sum(r.why_not_checked == "γ > 1/L" for r in rs),
            "diverged": sum(r.why_not_checked == "diverged" for r in rs),  # with γ ≤ 1/L
            "sampled_mean": sum(r.why_not_checked == "sampled mean" for r in rs),
            "violations": sum(r.violated for r in checked),
            "max_final_ratio": max(ratios) if ratios else math.nan,
            "median_final_ratio": float(np.median(ratios)) if ratios else math.nan,
            "informative": sum(r.informative_checks for r in checked),
            "vacuous": sum(r.vacuous_checks for r in checked),
            "runs_informative": sum(r.informative_checks > 0 for r in checked),
        })
        table[-1]["verdict"] = bound_verdict(table[-1]["informative"], table[-1]["vacuous"],
                                             sum(r.violating_checks for r in checked))
    return table


# one marker per method, so that methods lying on top of each other stay visible
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "*", "h", "p"]


def plot_bound(ax, runs: list[BoundRun]) -> int:
    """Measured against bound at the final K, one colour and marker per method, the method's δ in
    its legend entry; only runs the bound's assumptions cover. Returns how many points were drawn."""
    drawn, lo, hi, ylo, yhi = 0, math.inf, 0.0, math.inf, 0.0
    for i, (method, rs) in enumerate(by_method(runs).items()):
        pts = [(r.bound[-1], r.measured[-1]) for r in rs if r.checked]
        if not pts:
            continue
        P = np.array(pts)
        est = L_text([r for r in rs if r.checked])
        ax.scatter(P[:, 0], P[:, 1], s=16, marker=MARKERS[i % len(MARKERS)], alpha=0.8,
                   label=f"{method} ({delta_text(r.delta for r in rs if r.checked)}; {len(pts)} runs"
                         + ("" if est == "certified" else f"; {est} L") + ")")
        # each axis its own range: one shared range spanned the smallest measured mean to the
        # largest bound (10¹¹ in a report), squeezing both clouds into corners
        bx, my = P[:, 0][P[:, 0] > 0], P[:, 1][P[:, 1] > 0]
        if len(bx):
            lo, hi = min(lo, float(bx.min())), max(hi, float(bx.max()))
        if len(my):
            ylo, yhi = min(ylo, float(my.min())), max(yhi, float(my.max()))
        drawn += len(pts)
    if drawn and hi > 0 and yhi > 0:
        lo, hi, ylo, yhi = lo / 2, hi * 2, ylo / 2, yhi * 2
        d_lo, d_hi = max(lo, ylo), min(hi, yhi)
        if d_lo < d_hi:  # the diagonal where it lies inside the drawn box
            ax.plot([d_lo, d_hi], [d_lo, d_hi], "k--", lw=1, label="measured = bound")
        else:  # every point is far from it: say where it is rather than stretch the axes to it
            where = "above" if yhi < lo else "below"
            ax.plot([], [], "k--", lw=1, label=f"measured = bound: {where} this box (every point {'below' if where == 'above' else 'above'} it)")
        ax.set_xlim(lo, hi)
        ax.set_ylim(ylo, yhi)
        ax.legend(loc="upper left", fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    any_est = any(r.L_estimated for r in runs if r.checked)
    ax.set_xlabel(r"bound of §3 at the final $K$ (" + (r"$L$ certified or estimated (legend)" if any_est else r"exact $L$")
                  + r", $f_*$, $\delta$; running $G$)")
    ax.set_ylabel(r"measured $\frac{1}{K}\sum_{k<K} \|\nabla f(w_k)\|^2$")
    return drawn
