"""costs.overlap (issue 50): DualPipeV's F&B overlap as a run's key, declared beside the one
schedule that has pairs. A larger overlap shortens the simulated time and changes no iterate (a
flush method is mini-batch SGD); other methods refuse it as unread, naming dualpipev; 1 is refused
(a zero-length F cannot be ordered in a run); at its default it leaves a sweep run's name alone,
so no existing sweep run is renamed."""
from __future__ import annotations

import os

import numpy as np
import pytest

import stale

QUICK = os.path.join(os.path.dirname(__file__), "..", "..", "experiments", "quickstart.toml")
DPV = {"method.name": "dualpipev", "delay.name": None, "delay.max": None, "method.updates": 512}


def test_overlap_shortens_the_clock_and_changes_no_iterate():
    runs = {ov: stale.run(QUICK, **DPV, **{"costs.overlap": ov}) for ov in (0.0, 0.5, 0.9)}
    t = [runs[ov].series("time")[-1] for ov in (0.0, 0.5, 0.9)]
    assert t[0] > t[1] > t[2] > 0
    for ov in (0.5, 0.9):
        np.testing.assert_array_equal(runs[ov].final_w, runs[0.0].final_w)


def test_other_methods_refuse_it_and_one_is_out_of_range():
    with pytest.raises(stale.ConfigError, match="costs.overlap.*not read.*method.name = dualpipev"):
        stale.run(QUICK, **{**DPV, "method.name": "pipedream", "costs.overlap": 0.5})
    with pytest.raises(stale.ConfigError, match=r"costs.overlap = 1 is out of range; valid: >= 0 and < 1"):
        stale.run(QUICK, **DPV, **{"costs.overlap": 1.0})


def test_at_its_default_it_leaves_a_sweep_runs_name_alone(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(f'base = "{os.path.abspath(QUICK)}"\n[set]\n"method.name" = "dualpipev"\n"method.updates" = 64\n'
                    '[grid]\n"costs.overlap" = [0.0, 0.5]\nseed = [0]\n')
    plan = stale._stale.sweep_plan(str(spec), ["~delay.name", "~delay.max"], "0/1")
    plain = tmp_path / "p.toml"
    plain.write_text(f'base = "{os.path.abspath(QUICK)}"\n[set]\n"method.name" = "dualpipev"\n"method.updates" = 64\n'
                     "[grid]\nseed = [0]\n")
    (without,) = stale._stale.sweep_plan(str(plain), ["~delay.name", "~delay.max"], "0/1")
    assert plan[0]["hash"] == without["hash"]  # overlap 0.0 given or not: the same run, the same name
    assert plan[1]["hash"] != without["hash"]  # 0.5 is another run
    # and the name it had before the key existed: the pin of tests/delays/test_stage_profile_delay.cpp
    # (commit 090f6e9's binary); a key in schema.cpp's own table would rename every run and fail it
    pin = tmp_path / "pin.toml"
    pin.write_text(f'base = "{os.path.abspath(QUICK)}"\n[set]\n"method.updates" = 3\n[grid]\nseed = [0]\n')
    assert stale._stale.sweep_plan(str(pin), [], "0/1")[0]["hash"] == "a75759b66472eef8"
