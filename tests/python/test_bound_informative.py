"""Which §3 bound checks could have failed (issue 53; stale_analysis/bound.py check_labels): a check
evaluated with the running G passes by construction wherever the bound lies at or above S·G_K², the
ceiling that G sets for the measured mean, unless the measured mean is within reach of that ceiling.
Run files are synthetic (conftest.write_sweep's layout) with the bound written from its formula
2SΔ₀/(γK) + γSLG² + γ²L²δ²G², so the expected labels follow from the algebra alone."""
from __future__ import annotations

import numpy as np

from conftest import script, write_sweep
from stale_analysis.bound import REACH, bound_runs, bound_verdict, check_labels, method_table

S, L, LR, DELTA0, G = 8, 4.0, 0.0625, 1.0, 1.0  # c = γL = 1/4
K = np.linspace(0, 100, 21)


def bound_of(delta):
    """The bound at the logged K (nan at K = 0, as the recorder writes it)."""
    with np.errstate(divide="ignore"):
        b = 2 * S * DELTA0 / (LR * K) + LR * S * L * G ** 2 + LR ** 2 * L ** 2 * delta ** 2 * G ** 2
    b[0] = np.nan
    return b


def c_G(delta):
    c = LR * L
    return c + c * c * delta * delta / S


def test_the_g_coefficient_of_the_two_runs_lies_on_either_side_of_one():
    assert c_G(60) >= 1 > c_G(0)  # 28.4 and 0.25: the test below needs one run on each side


def test_labels_follow_the_algebra_of_the_bound():
    ceiling = S * G ** 2
    small = np.full(len(K), 0.01 * ceiling)
    # c + c²δ²/S ≥ 1: the G-terms alone reach the ceiling, every check is vacuous
    assert not check_labels(small, bound_of(60), np.full(len(K), G), S).any()
    # c + c²δ²/S < 1: informative once the optimisation term has fallen below (1 − c)·S·G², i.e. K > 2SΔ₀/(γ(1 − c)SG²)
    labels = check_labels(small, bound_of(0), np.full(len(K), G), S)
    k_min = 2 * S * DELTA0 / (LR * (1 - c_G(0)) * ceiling)
    np.testing.assert_array_equal(labels[1:], K[1:] > k_min)
    assert labels.any() and not labels.all()
    # within reach: the measured mean at REACH·S·G² counts whatever the bound, just below it does not
    near = np.full(len(K), REACH * ceiling)
    assert check_labels(near, bound_of(60), np.full(len(K), G), S)[1:].all()
    assert not check_labels(np.nextafter(near, 0), bound_of(60), np.full(len(K), G), S)[1:].any()
    # a violation is always informative, and a row without a running G never is
    assert check_labels(np.array([40.0]), np.array([30.0]), np.array([1.0]), S).all()
    assert not check_labels(np.array([0.1]), np.array([1.0]), np.array([np.nan]), S).any()


def test_bound_audit_counts_only_informative_checks(tmp_path):
    """A stale run with c + c²δ²/S ≥ 1 rests on no informative check and is 'not informative', never 'holds';
    a fresh run with c < 1 carries the checks at K past the optimisation term."""
    measured = np.full(len(K), 0.05)
    pts = [({"method.name": name, "delay.max": delta, "method.lr": LR, "seed": 0, "method.updates": 100}, np.ones(len(K)),
            "ok", {"bound": bound_of(delta), "measured": measured, "L": L, "G": G}) for name, delta in (("rpd", 60), ("bcd", 0))]
    d = write_sweep(tmp_path / "s", pts)
    table = {m["method"]: m for m in method_table(bound_runs([d]))}
    n_fresh = int(np.sum(K[1:] > 2 * S * DELTA0 / (LR * (1 - c_G(0)) * S * G ** 2)))
    assert table["rpd"]["informative"] == 0 and table["rpd"]["vacuous"] == len(K) - 1
    assert table["rpd"]["verdict"] == f"not informative (0 of {len(K) - 1} checks could fail)"
    assert table["bcd"]["informative"] == n_fresh and table["bcd"]["vacuous"] == len(K) - 1 - n_fresh
    assert table["bcd"]["verdict"] == bound_verdict(n_fresh, len(K) - 1 - n_fresh, 0)
    assert table["bcd"]["verdict"].startswith(f"holds ({n_fresh} informative checks")
    r = script("audits.py", "bound", d, "--results", tmp_path / "res")
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "res" / "audit_bound.md").read_text()
    assert f"{n_fresh} informative, {2 * (len(K) - 1) - n_fresh} vacuous; runs with no informative check: 1 of 2" in md
    assert f"| 0 | {len(K) - 1} | 0 | not informative (0 of {len(K) - 1} checks could fail) |" in md


def test_verdict_wording():
    assert bound_verdict(0, 12, 0) == "not informative (0 of 12 checks could fail)"
    assert bound_verdict(3, 9, 0) == "holds (3 informative checks; 9 vacuous)"
    assert bound_verdict(3, 9, 2) == "**violated** at 2 of 3 informative checks"
