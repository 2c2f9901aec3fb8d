"""scripts/structural_claims.py (issue 53, THEORY.md rows 20-22): each exact check holds where the
claim holds and fails on its control."""
from __future__ import annotations

import os
import sys

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import stale  # noqa: E402
import structural_claims as C  # noqa: E402


def test_pd_equals_rpd_replaying_its_table_and_not_in_random_order():
    same, control, dmax, _ = C.pd_is_rpd(4, updates=300)
    assert same and not control and dmax >= 14


def test_paci_idles_only_to_fill_and_drain_and_flush_idles_per_step():
    idle = lambda name, M: C.idle_time(stale.schedule(name, stages=4, microbatches=M, accumulation=4))  # noqa: E731
    assert idle("paci", 64) == idle("paci", 512)
    assert idle("1f1b-flush", 512) > 4 * idle("1f1b-flush", 64) > 0


def test_localsgd_utilisation_is_r_over_r_plus_s_minus_1_for_one_step_per_round():
    for R in (1, 2, 3, 4):
        s = stale.schedule("localsgd", stages=4, microbatches=16 * R, local_steps=1, replicas=R)
        assert abs(np.sum(s.busy) / (4 * s.makespan) - R / (R + 3)) < 1e-12
    s = stale.schedule("localsgd", stages=4, microbatches=16 * 4 * 16, local_steps=16, replicas=4)
    assert abs(np.sum(s.busy) / (4 * s.makespan) - 4 / 7) > 0.05
