"""stale.sweep(model=...) (issue 51, item 2): a model defined in Python gets a sweep like any
objective's: the grid as `stale sweep` plans it, one run file per config hash, finished runs
skipped, the index written by the command, and the step-size rule (with its grid-edge flag) and
the report reading the folder. Before, stale.sweep refused the model object with a TypeError."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import stale
from stale.least_squares import LeastSquaresStages

OBJECTIVE = {"objective.name": "quadratic", "objective.generator": "random", "objective.dim": 32,
             "objective.samples": 64, "objective.batch_size": 8, "objective.stages": 4, "seed": 0}
LRS = [0.01, 0.02, 0.04, 0.08]


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sweep_model") / "sw"
    spec = {"base": {"method.name": "pipedream", "method.updates": 200, "log.every": 10},
            "grid": {"method.lr": LRS, "log.exact_mean": [True]}}
    model = LeastSquaresStages(OBJECTIVE)
    return folder, spec, model, stale.sweep(spec, out=folder, model=model)


def test_each_grid_point_is_the_run_stale_run_makes_with_the_model(swept):
    folder, spec, model, index = swept
    assert sorted(index["method.lr"]) == LRS and set(index["status"]) == {"ok"}
    assert index.attrs["summary"] == {"total": 4, "ran": 4, "skipped": 0, "failed": 0}
    for _, row in index.iterrows():
        ref = stale.run({**spec["base"], "method.lr": row["method.lr"], "log.exact_mean": True}, model=model)
        got = stale.load(os.path.join(folder, row["path"]))  # the index's path is the folder's
        np.testing.assert_array_equal(got.series("loss"), ref.series("loss"))
        np.testing.assert_array_equal(got.final_w, ref.final_w)


def test_a_second_call_skips_the_finished_runs_and_the_rule_reads_the_folder(swept, stale_bin):
    folder, spec, model, _ = swept
    again = stale.sweep(spec, out=folder, model=model)
    assert again.attrs["summary"] == {"total": 4, "ran": 0, "skipped": 4, "failed": 0}
    chosen = stale.analysis.select(str(folder))
    assert len(chosen) == 1 and chosen[0]["lr"] in LRS
    assert chosen[0]["grid_edge"] == stale.analysis.grid_edge(chosen[0]["lr"], LRS)
    # a grid whose best step is its largest: the rule says so
    edge = stale.sweep({**spec, "grid": {"method.lr": [0.0025, 0.005]}}, out=folder.parent / "edge", model=model)
    assert set(edge["status"]) == {"ok"}
    assert stale.analysis.select(str(folder.parent / "edge"))[0]["grid_edge"] == "largest"
    r = subprocess.run([stale_bin, "report", str(folder)], capture_output=True, text=True)
    assert r.returncode == 0 and "4 runs" in r.stdout + r.stderr, r.stderr


def test_a_refused_dict_sweep_leaves_nothing_behind(tmp_path):
    """README: failures create no files; the dict's sweep.toml was left in a new folder"""
    folder = tmp_path / "refused"
    with pytest.raises(stale.ConfigError, match="method.lrx"):
        stale.sweep({"base": {"method.updates": 10}, "grid": {"method.lrx": [0.1, 0.2]}}, out=folder)
    assert not folder.exists()
