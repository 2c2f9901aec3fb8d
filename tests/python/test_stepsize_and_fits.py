"""The step-size rule of docs/theory.md §8 and the exponent fits of §9 on hand-made curves
(scripts/stale_analysis/stepsize.py, fits.py), and stepsize.py over a synthetic sweep."""
from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest

from conftest import decaying, script, write_sweep
from stale_analysis import choose, fit_exponent, grid_edge, is_stable, positive_tail, tail_stats
from stale_analysis.fits import r_squared


def test_a_smooth_decaying_curve_is_stable():
    st = tail_stats(decaying(1.0))
    assert st["finite"] and is_stable(st)
    assert st["up_frac"] == 0.0 and st["log_slope"] < 0


def test_an_oscillating_tail_is_unstable():
    y = decaying(1.0)
    y[-10:] *= np.array([1.0, 1.3] * 5)  # upward jumps of 30%
    st = tail_stats(y)
    assert st["finite"] and not is_stable(st)
    assert st["max_jump"] > 0.05 and st["up_frac"] >= 0.45


def test_a_rising_tail_is_unstable_by_its_log_slope():
    y = np.linspace(1.0, 2.0, 40)
    st = tail_stats(y)
    assert st["log_slope"] > 1e-4 and not is_stable(st)


def test_the_rule_takes_the_smallest_step_within_5_percent_of_the_best_stable_tail():
    cands = {lr: tail_stats(decaying(c)) for lr, c in ((0.25, 1.0), (0.5, 1.04), (1.0, 1.2), (0.125, 1.06))}
    # tails: 0.25 → best; 0.5 within 4%; 0.125 is 6% worse; the smallest within 5% is 0.25
    lr, why = choose(cands)
    assert lr == 0.25 and why.startswith("stable")
    cands[0.125] = tail_stats(decaying(1.03))
    assert choose(cands)[0] == 0.125
    assert choose(cands, rule="best")[0] == 0.25


def test_without_a_stable_step_the_lowest_tail_wins():
    y1 = decaying(1.0)
    y1[-10:] *= np.array([1.0, 1.3] * 5)
    y2 = decaying(2.0)
    y2[-10:] *= np.array([1.0, 1.3] * 5)
    lr, why = choose({0.1: tail_stats(y2), 0.2: tail_stats(y1)})
    assert lr == 0.2 and why.startswith("none stable")


def test_diverged_curves_are_never_chosen_and_raise_no_numpy_warnings():
    big = decaying(1.0) * np.logspace(0, 300, 40)  # ends at 1e300 × its start: overflow territory
    with_inf = decaying(1.0)
    with_inf[30:] = np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stats = {0.5: tail_stats(big), 1.0: tail_stats(with_inf), 0.01: tail_stats(decaying(3.0))}
        assert not stats[0.5]["finite"] and not stats[1.0]["finite"]
        assert choose(stats)[0] == 0.01
        assert choose({0.5: stats[0.5], 1.0: stats[1.0]}) == (0.5, "every step size diverged; smallest reported")


def test_exponent_fit_recovers_a_power_law_exactly():
    x = np.array([4, 8, 16, 32, 64])
    Y = np.array([3.0 * x ** 2.0, 3.0 * x ** 2.0])
    est, lo, hi = fit_exponent(x, Y)
    assert est == pytest.approx(2.0, abs=1e-9)
    assert lo == pytest.approx(2.0, abs=1e-9) and hi == pytest.approx(2.0, abs=1e-9)
    assert r_squared(x, Y[0]) == pytest.approx(1.0, abs=1e-9)


def test_exponent_fit_interval_covers_the_truth_under_seed_noise():
    rng = np.random.default_rng(1)
    x = np.array([2, 4, 8, 16, 32, 64], float)
    Y = np.array([0.5 * x ** 4 * np.exp(rng.normal(0, 0.1, len(x))) for _ in range(8)])
    est, lo, hi = fit_exponent(x, Y)
    assert abs(est - 4.0) < 0.05
    assert lo <= est <= hi and hi - lo < 0.2


def test_exponent_fit_skips_non_positive_means():
    x = [1, 2, 4, 8]
    est, _, _ = fit_exponent(x, [[-1.0, -2.0, 16.0, 64.0]])
    assert est == pytest.approx(2.0)
    assert math.isnan(fit_exponent(x, [[-1, -1, -1, 1.0]])[0])


def test_positive_tail():
    assert positive_tail([1, 2, 4, 8], [-1, 2, -3, 4]) == 3
    assert positive_tail([1, 2, 4, 8], [-1, -2, 3, 4]) == 2
    assert positive_tail([1, 2], [1, 2]) == 0


def test_stepsize_cli_sorts_configurations_numerically(tmp_path):
    points = []
    for delta in (180, 8, 30):
        for lr in (0.005, 0.01, 0.02):
            for seed in (0, 1):
                points.append(({"delay.max": delta, "method.lr": lr, "seed": seed},
                               decaying(1.0 + delta / 100 + (lr == 0.02) * 0.5 + (lr == 0.005) * 0.3), "ok"))
    d = write_sweep(tmp_path / "sw", points)
    r = script("stepsize.py", d)
    assert r.returncode == 0, r.stderr
    # no warning of the script's own (a grid-edge choice) and none from its arithmetic
    # (RuntimeWarning: a division by zero, a nan); what a newer numpy or pandas announces about
    # itself (a DeprecationWarning) is not this test's to forbid
    assert "warning: " not in r.stderr and "RuntimeWarning" not in r.stderr, r.stderr
    configs = [line.split("|")[1].strip() for line in r.stdout.splitlines()[2:]]
    assert configs == ["delay.max=8", "delay.max=30", "delay.max=180"]
    assert all("| 0.01 |" in line for line in r.stdout.splitlines()[2:])


def test_stepsize_cli_warns_when_the_choice_is_at_a_grid_edge(tmp_path):
    # the best step size is the grid's largest for δ = 8 (the curve still improves with γ), and
    # interior for δ = 30
    points = []
    for delta in (8, 30):
        for lr in (0.01, 0.02, 0.04):
            better = {0.01: 0.6, 0.02: 0.3, 0.04: 0.0} if delta == 8 else {0.01: 0.6, 0.02: 0.0, 0.04: 0.4}
            points.append(({"delay.max": delta, "method.lr": lr, "seed": 0}, decaying(1.0 + better[lr]), "ok"))
    d = write_sweep(tmp_path / "sw", points)
    r = script("stepsize.py", d)
    assert r.returncode == 0, r.stderr
    warnings_ = r.stderr.strip().splitlines()
    assert len(warnings_) == 1 and "delay.max=8" in warnings_[0] and "largest step size of the grid" in warnings_[0]
    rows = r.stdout.splitlines()[2:]
    assert "0.04 (grid's largest)" in rows[0] and "grid's" not in rows[1]
    assert script("stepsize.py", d, "--strict").returncode == 1
    assert grid_edge(0.01, [0.04, 0.01, 0.02]) == "smallest" and grid_edge(0.02, [0.01, 0.02, 0.04]) == ""
    assert grid_edge(0.01, [0.01]) == ""  # a grid of one step size has no edge to widen


def test_stepsize_cli_unknown_lr_key_is_one_line(tmp_path):
    d = write_sweep(tmp_path / "sw", [({"method.lr": 0.1, "seed": 0}, decaying(1.0), "ok")])
    r = script("stepsize.py", d, "--lr-key", "method.rate")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "'method.rate' is not an axis" in r.stderr
    r = script("stepsize.py", tmp_path / "nowhere")
    assert r.returncode == 2 and "not a sweep folder" in r.stderr


def test_plot_runs_chosen_lr_draws_each_configurations_chosen_step_size_only(tmp_path):
    # δ = 8 is best at γ = 0.02 (interior), δ = 30 at the grid's largest 0.04 (warned about)
    points = []
    for delta in (8, 30):
        for lr in (0.01, 0.02, 0.04):
            better = {0.01: 0.6, 0.02: 0.0, 0.04: 0.4} if delta == 8 else {0.01: 0.6, 0.02: 0.3, 0.04: 0.0}
            for seed in (0, 1):
                points.append(({"delay.max": delta, "method.lr": lr, "seed": seed}, decaying(1.0 + better[lr]), "ok"))
    d = write_sweep(tmp_path / "sw", points)
    out = tmp_path / "chosen.png"
    r = script("plot_runs.py", d, "--chosen-lr", "stable", "--group-by", "delay.max", "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.exists()
    warnings_ = [x for x in r.stderr.splitlines() if x.startswith("warning:")]
    assert len(warnings_) == 1 and "delay.max=30" in warnings_[0] and "largest" in warnings_[0]
    # the groups are one (δ, γ) each: the legend names the chosen γ, so no group mixes step sizes
    assert "mixed" not in r.stderr
    # a run file instead of a sweep folder is a one-line error
    one = os.path.join(d, "runs", "r0.h5")
    r = script("plot_runs.py", one, "--chosen-lr", "stable", "-o", tmp_path / "x.png")
    assert r.returncode == 2 and "needs sweep folders" in r.stderr and len(r.stderr.strip().splitlines()) == 1
