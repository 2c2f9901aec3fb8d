"""experiments.py and audits.py find the sweep folders the README's commands write; diverged
runs are excluded from the bound plots and counted (scripts/stale_analysis/runs.py,
experiments.py, audits.py, plot_runs.py, summarize_runs.py)."""
from __future__ import annotations

import os
import re

import h5py
import numpy as np
import pytest

from conftest import ROOT, decaying, script, write_run, write_sweep
from stale_analysis import is_diverged, load_run
from stale_analysis.runs import divergence_reason

README = open(os.path.join(ROOT, "README.md")).read()
REPRODUCE = open(os.path.join(ROOT, "scripts", "reproduce.sh")).read()


def readme_sweeps():
    """(sweep file stem, output folder) for every `stale sweep experiments/X.toml … # → DIR/index.csv`"""
    return re.findall(r"stale sweep experiments/(\w+)\.toml[^\n]*?→\s*(\S+)/index\.csv", README)


def e1_points():
    pts = []
    for name, dname, dmax in (("pipedream", "zero", 0), ("rpd", "uniform", 8), ("rpd", "uniform", 60)):
        for lr in (0.0078125, 0.015625):
            for seed in (0, 1):
                pts.append(({"method.name": name, "delay.name": dname, "delay.max": dmax, "method.batch_order": "auto",
                             "method.lr": lr, "seed": seed}, decaying(1.0 + dmax / 100 + lr), "ok"))
    return pts


def test_the_readme_sweep_writes_the_folder_experiments_py_reads(tmp_path):
    pairs = readme_sweeps()
    assert ("e1_sweep", "sweeps/e1_sweep") in pairs, pairs
    for stem, folder in pairs:
        assert folder == f"sweeps/{stem}"  # `stale sweep` writes sweeps/<stem> by default
    write_sweep(tmp_path / "sweeps" / "e1_sweep", e1_points())
    r = script("experiments.py", "e1", "--sweeps", tmp_path / "sweeps", "--results", tmp_path / "results")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "results" / "e1_pd_vs_rpd.png").stat().st_size > 0
    table = (tmp_path / "results" / "e1_table.md").read_text()
    assert [line.split("|")[1].strip() for line in table.splitlines()[2:]] == ["PD", "RPD δ=8", "RPD δ=60"]


def test_reproduce_sh_uses_the_same_folders():
    import experiments
    for stem in experiments.SWEEPS.values():
        assert stem in REPRODUCE
    assert '--out "sweeps/$1"' in REPRODUCE


def test_a_missing_sweep_is_one_line_naming_where_it_looked(tmp_path):
    r = script("experiments.py", "e1", "--sweeps", tmp_path, "--results", tmp_path / "res")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert os.path.join(str(tmp_path), "e1_sweep") in r.stderr and "experiments/e1_sweep.toml" in r.stderr
    r = script("audits.py", "paci", "--sweeps", tmp_path, "--results", tmp_path / "res")
    assert r.returncode == 2 and "audit_paci_sweep" in r.stderr


def test_older_short_folder_names_are_still_found(tmp_path):
    write_sweep(tmp_path / "sweeps" / "e1", e1_points())
    r = script("experiments.py", "e1", "--sweeps", tmp_path / "sweeps", "--results", tmp_path / "results")
    assert r.returncode == 0, r.stderr


def test_divergence_rule(tmp_path):
    ok = load_run(write_run(tmp_path / "ok.h5", [10.0, 1.0]))
    exploded = load_run(write_run(tmp_path / "big.h5", [10.0, 1e7 * 10 + 1]))
    flagged = load_run(write_run(tmp_path / "flag.h5", [10.0, 5.0], status="diverged"))
    nan = load_run(write_run(tmp_path / "nan.h5", [10.0, np.nan]))
    assert not is_diverged(ok)
    assert is_diverged(exploded) and "1e+06" in divergence_reason(exploded)
    assert is_diverged(flagged) and is_diverged(nan)
    assert not is_diverged(load_run(write_run(tmp_path / "edge.h5", [10.0, 1e7])))  # exactly 1e6 × start


def test_the_binary_run_with_gamma_1_counts_as_diverged(binary_runs):
    assert is_diverged(load_run(binary_runs["diverging"]))
    assert not is_diverged(load_run(binary_runs["d0_lr0.015625_s0"]))


def test_summary_counts_diverged_runs_and_leaves_them_out_of_the_metrics(binary_runs):
    files = [binary_runs["d0_lr0.015625_s0"], binary_runs["diverging"]]
    r = script("summarize_runs.py", *files, "--group-by", "method.lr")
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| 1 |")]
    assert len(rows) == 1 and "diverged 1" in rows[0]
    assert rows[0].count("—") == 4  # no metric from the diverged run


def test_plot_runs_counts_diverged_runs(binary_runs, tmp_path):
    r = script("plot_runs.py", binary_runs["d0_lr0.015625_s0"], binary_runs["diverging"], "--group-by", "method.lr",
               "-o", tmp_path / "d.png")
    assert r.returncode == 0, r.stderr


def bound_sweep(folder):
    """Three RPD runs with γ ≤ 1/L (one of them diverged by the 1e6 rule) and one with γ > 1/L."""
    good = decaying(1.0)
    exploded = np.concatenate([good[:20], np.logspace(1, 200, 20)])
    return write_sweep(folder, [
        ({"method.lr": 0.0625, "seed": 0}, good, "ok"),
        ({"method.lr": 0.125, "seed": 0}, good * 1.1, "ok"),
        ({"method.lr": 0.25, "seed": 0}, exploded, "ok"),
        ({"method.lr": 0.5, "seed": 0}, good, "ok"),
    ])


def test_bound_audit_excludes_diverged_runs_and_says_so(tmp_path):
    d = bound_sweep(tmp_path / "sweeps" / "audit_x")
    res = tmp_path / "results"
    r = script("audits.py", "bound", d, "--results", res)
    assert r.returncode == 0, r.stderr
    md = (res / "audit_bound.md").read_text()
    assert "checked at every logged K: 2" in md
    assert "(γ > 1/L, not checked): 1;" in md and "status not ok; not checked): 1." in md
    assert (res / "audit_bound.png").stat().st_size > 0


def test_load_run_reads_what_an_eager_read_of_the_file_gives(binary_runs):
    # load_run reads series and attributes on first use: the values are the file's, bit for bit
    path = next(iter(binary_runs.values()))
    run = load_run(path)
    with h5py.File(path, "r") as f:
        assert sorted(run.metrics) == sorted(f["metrics"])
        for name in f["metrics"]:
            np.testing.assert_array_equal(run.metrics[name], f["metrics"][name][()])
        assert run.theory == {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f["theory"].attrs.items()}
        assert run.objective.keys() == f["objective"].attrs.keys()
        assert "config" not in run.attrs and run.attrs["status"] == run.status == "ok"
    assert "no_such_series" not in run.metrics and run.metrics.get("no_such_series") is None


def test_a_partial_run_file_is_cut_to_the_rows_every_series_holds(tmp_path):
    # a killed .partial may hold one series a flush longer than another
    path = write_run(tmp_path / "killed.h5.partial", [10.0, 5.0, 2.0], status="running")
    with h5py.File(path, "a") as f:
        v = f["metrics"]["loss"][()]
        del f["metrics"]["loss"]
        f["metrics"]["loss"] = np.concatenate([v, [1.0, 0.5]])
    run = load_run(path)
    assert len(run.metrics["loss"]) == len(run.metrics["k"]) == 3


def test_a_sweep_folder_stands_for_the_runs_its_index_lists(tmp_path):
    """plot_runs.py / summarize_runs.py given a sweep folder read the runs of its index.csv: not a
    stray file an earlier version of the sweep left in runs/ (scripts/main.sh rerun over an old
    folder mixed them in through runs/*.h5), not a failed point, and a file two points share once."""
    from stale_analysis.errors import AnalysisError
    from stale_analysis.runs import load_runs, run_paths
    pts = [({"delay.max": d, "seed": 0}, decaying(1.0 + d), "ok") for d in (0, 4, 8)]
    folder = write_sweep(tmp_path / "sw", pts)
    write_run(os.path.join(folder, "runs", "stale_old.h5"), decaying(9.0), **{"delay.max": 99})
    with open(os.path.join(folder, "index.csv")) as f:
        lines = f.read().splitlines()
    # a failed point (no file of its own) and a point that is the same run as the first
    lines.append(lines[1].replace(",ok,", ",failed,"))
    lines.append(lines[1])
    with open(os.path.join(folder, "index.csv"), "w") as f:
        f.write("\n".join(lines) + "\n")
    paths = run_paths([folder])
    assert [os.path.basename(p) for p in paths] == ["r0.h5", "r1.h5", "r2.h5"]
    assert sorted(r.key("delay.max") for r in load_runs([folder])) == [0, 4, 8]
    os.remove(os.path.join(folder, "index.csv"))
    with pytest.raises(AnalysisError, match="not a sweep folder"):
        run_paths([folder])
