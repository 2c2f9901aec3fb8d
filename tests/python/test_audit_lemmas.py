"""scripts/audit_lemmas.py (issue 53): the read points rebuilt from a run's logs reproduce its
logged steps, and each proof-step check fails on an input made to fail it: a delay table one
update off, an L four times too small, a G 32 times too small."""
from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import audit_lemmas as A  # noqa: E402


@pytest.fixture(scope="module")
def case():
    A.UPDATES = 400  # a short run: the checks, not the table
    p = A.Problem(A.CONFIG, seed=1)
    G = A.pilot_G(p, 2.0 ** -6, 1)
    return p, G, A.run_of(2.0 ** -6, 30, 1)


def test_the_rebuilt_read_points_reproduce_the_logged_steps_and_a_shifted_table_does_not(case):
    p, _, run = case
    assert A.read_points(run, p)[1] < 1e-12
    assert A.read_points(run, p, shift=1)[1] > 1e-3
    # another seed's data (the generator draws each seed's own problem) is caught the same way
    assert A.read_points(run, A.Problem(A.CONFIG, seed=0))[1] > 1e-3


def test_each_proof_step_check_can_fail(case):
    p, G, run = case
    right = A.lemmas(run, p, G, p.L)
    assert right["smooth"] <= 1 and right["drift"] <= 1
    assert A.lemmas(run, p, G, p.L / 4)["smooth"] > 1
    small_G = A.lemmas(run, p, G / 32, p.L)
    assert small_G["drift"] > 1 and small_G["G_max"] > 1 and small_G["G_max_frac"] > 0.5
