"""The exponent and level rules of stale_analysis/law_verdicts.py (issue 53) at the per-seed noise of
the committed δ-regime audit (results/audit_delta_regime.md, γ = 2⁻⁵, uniform δ = 2 … 64, 5 seeds:
coefficient of variation 0.36–1.76 per point, read by scripts/verdict_power.py), not at 5 %.

Statistical tests with their power stated: each draws TRIALS simulated audits from fixed seeds (the
outcome is deterministic), and the expected rates come from results/THEORY_POWER.md (relative noise,
5 seeds: p = 1 met ≈ 0.9–1.0; p = 4 NOT met ≈ 1.0; p = 2 NOT met ≈ 0.01). The tolerances leave room
for the binomial spread of TRIALS = 60 audits (a standard error ≤ 0.065)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import SCRIPTS  # noqa: F401  (puts scripts/ on the path)
from stale_analysis.law_verdicts import (exponent_verdict, fit_exponent_raw, fit_power_raw, level_verdict, t_cdf,
                                         t_quantile)
from verdict_power import measured_noise

TRIALS = 60
X, MEAN, SD = measured_noise()
CV = SD / MEAN


def verdicts(p, seeds=5, trials=TRIALS, predicted=2.0):
    rng = np.random.default_rng([7, int(10 * p), seeds])
    m = (X / X[-1]) ** p
    out = [exponent_verdict(fit_exponent_raw(X, m * (1 + CV * rng.standard_normal((seeds, len(X)))), boot=200, seed=k),
                            predicted) for k in range(trials)]
    return {v: out.count(v) / trials for v in set(out)}


def test_the_noise_is_the_committed_runs_not_five_percent():
    assert list(X) == [2, 4, 8, 16, 32, 64]
    assert CV.min() > 0.3 and CV.max() > 1.5  # 7–35× the 5 % the old fit's test used


def test_t_quantiles_match_the_tables():
    assert t_quantile(0.975, 4) == pytest.approx(2.7764, abs=1e-4)
    assert t_quantile(0.95, 9) == pytest.approx(1.8331, abs=1e-4)
    assert t_quantile(0.975, 1) == pytest.approx(12.7062, abs=1e-4)
    assert t_cdf(0.0, 3) == 0.5 and t_quantile(0.05, 6) == pytest.approx(-1.9432, abs=1e-4)


def test_the_raw_scale_fit_recovers_an_exact_power_and_keeps_negative_points():
    y = 3.0 * X ** 1.7
    assert fit_power_raw(X, y[None, :], np.ones(len(X)))[0] == pytest.approx(1.7, abs=2e-3)
    y[0] = -1.0  # a negative mean stays in the fit (no log), and moves it only a little
    assert fit_power_raw(X, y[None, :], np.ones(len(X)))[0] == pytest.approx(1.7, abs=0.05)
    assert np.isnan(fit_power_raw(X, -y[None, :], np.ones(len(X)))[0])  # nothing positive to fit


def test_exponent_one_is_met_for_a_prediction_of_two():
    assert verdicts(1.0).get("met", 0) >= 0.85  # power table: 0.9–1.0


def test_exponent_four_is_not_met_for_a_prediction_of_two():
    assert verdicts(4.0).get("NOT met", 0) >= 0.9  # power table: 1.0


def test_exponent_two_rarely_raises_a_false_alarm():
    assert verdicts(2.0).get("NOT met", 0) <= 0.1  # nominal 2.5 %, power table ≈ 1 %


def test_level_verdict_is_paired_and_can_fail():
    rng = np.random.default_rng(3)
    pred = 10 * X ** 2
    base = rng.standard_normal((5, 1)) * 2  # a seed effect shared by every point (common random numbers)
    below = base + 0.5 * pred + rng.standard_normal((5, len(X)))
    assert level_verdict(below, pred).verdict == "met"
    above = base + 2.0 * pred + rng.standard_normal((5, len(X)))
    assert level_verdict(above, pred).verdict == "NOT met"
    v = level_verdict(pred + rng.standard_normal((5, len(X))) * pred, pred)
    assert v.verdict == "undecided" and v.points == len(X) and v.seeds == 5
