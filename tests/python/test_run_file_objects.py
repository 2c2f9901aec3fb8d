"""The one reader's access to a run file's groups besides /metrics (Run.has, .dataset,
.group_attrs) and to schedule files (open_schedule), on files the binary wrote: every value
equals h5py's own read, and a missing, misplaced or damaged object is an AnalysisError naming
the file (scripts/stale_analysis/runs.py)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import h5py
import numpy as np
import pytest

from conftest import write_run
from stale_analysis import AnalysisError, load_run, open_schedule


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def h5py_objects(path):
    """(datasets, groups) outside /metrics as h5py reads them: name -> array, name -> decoded attrs"""
    datasets, groups = {}, {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if name == "metrics" or name.startswith("metrics/"):
                return
            if isinstance(obj, h5py.Dataset):
                datasets[name] = obj[()]
            else:
                groups[name] = {k: text(v) for k, v in obj.attrs.items()}
        f.visititems(visit)
    return datasets, groups


def assert_reads_like_h5py(reader, path, expect):
    datasets, groups = h5py_objects(path)
    assert set(expect) <= set(datasets) | set(groups), sorted(datasets) + sorted(groups)
    for name, want in datasets.items():
        got = reader.dataset(name)
        assert reader.has(name) and got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_array_equal(got, want, err_msg=name)
    for name, want in groups.items():
        assert reader.has(name)
        assert reader.group_attrs(name).keys() == want.keys(), name
        for k, v in want.items():
            np.testing.assert_array_equal(reader.group_attrs(name)[k], v, err_msg=f"{name}.{k}")


def test_a_runs_groups_read_like_h5py(binary_runs):
    path = binary_runs["pipedream"]
    run = load_run(path)
    assert_reads_like_h5py(run, path, ["schedule", "schedule/start", "schedule/max_crossed_measured", "delay_moments",
                                       "delay_moments/second", "delay_summary", "iterates"])
    assert run.group_attrs("schedule")["name"] == "pipedream"  # text decoded
    # a part read alone equals that part of the whole
    iterates = run.dataset("iterates")
    assert len(iterates) > 1
    np.testing.assert_array_equal(run.dataset("iterates", slice(-1, None)), iterates[-1:])
    np.testing.assert_array_equal(run.dataset("schedule/start", slice(2, 5)), run.dataset("schedule/start")[2:5])
    with h5py.File(path, "r") as f:
        assert run.group_attrs("/") == {k: text(v) for k, v in f.attrs.items()}


def test_a_missing_or_misplaced_object_is_one_line_naming_the_file(binary_runs):
    path = binary_runs["d0_lr0.015625_s0"]  # RPD: no schedule
    run = load_run(path)
    assert not run.has("schedule") and not run.has("schedule/start")
    for read, name, what in ((run.dataset, "schedule/start", "no /schedule/start"),
                             (run.group_attrs, "schedule", "no /schedule"),
                             (run.dataset, "theory", "/theory is not a dataset"),
                             (run.group_attrs, "iterates", "/iterates is not a group")):
        with pytest.raises(AnalysisError) as e:
            read(name)
        assert str(e.value).startswith(f"{path}: {what}") and "\n" not in str(e.value)


def test_theory_and_objective_of_a_file_without_them_are_empty(tmp_path):
    run = load_run(write_run(tmp_path / "r.h5", [2.0, 1.0]))  # /theory but no /objective
    assert run.objective == {} and run.theory["L"] == 4.0 and "config" not in run.attrs


def test_a_run_file_damaged_after_it_was_opened(binary_runs, tmp_path):
    path = str(tmp_path / "r.h5")
    shutil.copy(binary_runs["pipedream"], path)
    run = load_run(path)
    with open(path, "r+b") as f:  # a later writer's crash: the file cut short
        f.truncate(os.path.getsize(path) // 2)
    for read in (lambda: run.dataset("schedule/start"), lambda: load_run(path)):
        with pytest.raises(AnalysisError, match=f"^{re.escape(path)}: not a readable HDF5 run file .*truncated file"):
            read()
    os.remove(path)
    with pytest.raises(AnalysisError, match=f"^{re.escape(path)}: no such file$"):
        run.group_attrs("schedule")


@pytest.fixture(scope="module")
def schedule_file(stale_bin, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("schedule") / "pd.h5")
    r = subprocess.run([stale_bin, "schedule", "pipedream", "--stages", "4", "--microbatches", "16", "--out", out],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def test_a_schedule_file_reads_like_h5py(schedule_file):
    s = open_schedule(schedule_file)
    with h5py.File(schedule_file, "r") as f:
        assert s.attrs == {k: text(v) for k, v in f.attrs.items()}
    assert s.attrs["schedule"] == "pipedream" and s.attrs["stages"] == 4
    assert_reads_like_h5py(s, schedule_file, ["delay_summary", "delay_summary/steady_max", "delays", "updates/block",
                                              "schedule/peak_versions"])


def test_open_schedule_refuses_other_files(schedule_file, binary_runs, tmp_path):
    run = binary_runs["pipedream"]
    with pytest.raises(AnalysisError, match=f"^{re.escape(run)}: not a stale schedule file"):
        open_schedule(run)
    newer = str(tmp_path / "newer.h5")
    shutil.copy(schedule_file, newer)
    with h5py.File(newer, "r+") as f:
        f.attrs["schema_version"] = 2
    with pytest.raises(AnalysisError, match=f"^{re.escape(newer)}: schedule file schema_version 2; this version of stale reads 1"):
        open_schedule(newer)
    with pytest.raises(AnalysisError, match=f"^{re.escape(schedule_file)}: not a stale run file"):
        load_run(schedule_file)
    with pytest.raises(AnalysisError, match=f"^{re.escape(schedule_file)}: no /reads/forward_indx in this schedule file"):
        open_schedule(schedule_file).dataset("reads/forward_indx")
