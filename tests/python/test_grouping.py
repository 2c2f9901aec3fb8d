"""--group-by over several keys, --where, the mixed-group warning, numeric sorting, one-line
errors (plot_runs.py, summarize_runs.py, scripts/stale_analysis/grouping.py)."""
from __future__ import annotations

import os

import pytest

from conftest import decaying, script, write_run
from stale_analysis import AnalysisError, filter_runs, group_runs, load_run, parse_keys, parse_where, sort_key


def table_rows(stdout: str) -> list[list[str]]:
    """Body rows of the first Markdown table in stdout, as cells."""
    lines = [line for line in stdout.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[1:]]


def test_group_by_two_keys_gives_one_row_per_pair_in_numeric_order(binary_runs):
    files = [p for n, p in binary_runs.items() if n.startswith(("d0_", "d8_"))]
    r = script("summarize_runs.py", *files, "--group-by", "delay.max,method.lr")
    assert r.returncode == 0, r.stderr
    rows = table_rows(r.stdout)
    assert [(row[0], row[1]) for row in rows] == [("0", "0.015625"), ("0", "0.03125"), ("8", "0.015625"),
                                                 ("8", "0.03125")]
    assert all(row[4] == "2" for row in rows)  # two seeds per group
    assert all(row[3] == "yes" for row in rows)  # γ ≤ 1/L (L of the E1 problem)
    assert "warning" not in r.stderr  # groups differ only in the seed


def test_plot_runs_groups_over_two_keys(binary_runs, tmp_path):
    files = [p for n, p in binary_runs.items() if n.startswith(("d0_", "d8_"))]
    out = tmp_path / "two.png"
    r = script("plot_runs.py", *files, "--group-by", "method.name,delay.max", "--where", "method.lr=0.015625",
               "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 0
    assert "warning" not in r.stderr


def test_mixed_step_sizes_in_a_group_warn_and_show_in_the_table(binary_runs):
    files = [p for n, p in binary_runs.items() if n.startswith(("d0_", "d8_"))]
    r = script("summarize_runs.py", *files, "--group-by", "delay.max")
    assert r.returncode == 0, r.stderr
    warnings = [line for line in r.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2  # one per δ group
    assert all("method.lr (0.015625, 0.03125)" in w for w in warnings)
    rows = table_rows(r.stdout)
    assert all("mixed: method.lr" in row[-1] for row in rows)
    assert "γ varies" in r.stdout  # no single γ claimed in the footer


def test_mixed_group_warns_in_plot_runs_too(binary_runs, tmp_path):
    files = [p for n, p in binary_runs.items() if n.startswith(("d0_", "d8_"))]
    r = script("plot_runs.py", *files, "--group-by", "delay.max", "-o", tmp_path / "mixed.png")
    assert r.returncode == 0, r.stderr
    assert "method.lr" in r.stderr and "warning" in r.stderr


def test_labels_name_the_keys_that_tell_groups_apart(tmp_path):
    pd = load_run(write_run(tmp_path / "pd.h5", [1, 0.5], **{"method.name": "pipedream", "delay.name": "zero"}))
    rpd = load_run(write_run(tmp_path / "rpd.h5", [1, 0.5], **{"delay.max": 60}))
    groups = group_runs([pd, rpd], ["delay.max"])
    assert [g.label() for g in groups] == ["delay.max=0, delay.name=zero, method.name=pipedream",
                                           "delay.max=60, delay.name=uniform, method.name=rpd"]


@pytest.mark.parametrize("args, needle", [
    (["--group-by", "delay.maxx"], "unknown key 'delay.maxx'; did you mean delay.max"),
    (["--group-by", "method.name,nonsense"], "unknown key 'nonsense'"),
    (["--where", "delay.mux=0"], "unknown key 'delay.mux'"),
    (["--where", "delay.max"], "expected key=value"),
    (["--where", "delay.max=12345"], "no run matches --where delay.max=12345"),
])
@pytest.mark.parametrize("tool", ["plot_runs.py", "summarize_runs.py"])
def test_bad_keys_give_one_line_and_exit_2(binary_runs, tmp_path, tool, args, needle):
    extra = ["-o", tmp_path / "x.png"] if tool == "plot_runs.py" else []
    r = script(tool, binary_runs["d0_lr0.015625_s0"], *args, *extra)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("tool", ["plot_runs.py", "summarize_runs.py", "stale_h5.py"])
def test_missing_or_foreign_files_give_one_line_and_exit_2(tmp_path, tool):
    (tmp_path / "notes.h5").write_text("not hdf5")
    for bad in (tmp_path / "absent.h5", tmp_path / "notes.h5"):
        r = script(tool, bad)
        assert r.returncode == 2
        assert len(r.stderr.strip().splitlines()) == 1 and str(bad) in r.stderr


def test_time_axis_without_a_schedule_is_a_clean_error(binary_runs, tmp_path):
    r = script("plot_runs.py", binary_runs["d0_lr0.015625_s0"], "--x", "time", "-o", tmp_path / "t.png")
    assert r.returncode == 2 and "no simulated time" in r.stderr and "--x k" in r.stderr


def test_time_axis_of_a_schedule_method(binary_runs, tmp_path):
    out = tmp_path / "t.png"
    r = script("plot_runs.py", binary_runs["pipedream"], "--x", "time", "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 0


def test_summary_goes_to_stdout_and_optionally_to_a_file(binary_runs, tmp_path):
    out = tmp_path / "t.md"
    r = script("summarize_runs.py", binary_runs["d0_lr0.015625_s0"], "--group-by", "delay.max", "-o", out)
    assert r.returncode == 0
    assert r.stdout == out.read_text()
    assert r.stdout.startswith("| delay.max | γ |")


def test_numeric_values_sort_as_numbers():
    assert sorted(["180", "30", "8", "60"], key=sort_key) == ["8", "30", "60", "180"]
    assert sorted([0.03125, 0.0039, 1.0], key=sort_key) == [0.0039, 0.03125, 1.0]
    assert sorted([("rpd", "10"), ("rpd", "9"), ("pipedream", "0")], key=sort_key) == [
        ("pipedream", "0"), ("rpd", "9"), ("rpd", "10")]
    assert sorted(["b", "10", "a", "2"], key=sort_key) == ["2", "10", "a", "b"]  # numbers first


def test_groups_come_out_in_numeric_order(tmp_path):
    runs = [load_run(write_run(tmp_path / f"d{d}.h5", [1, 0.5], **{"delay.max": d})) for d in (180, 8, 30, 1024)]
    assert [g.values[0] for g in group_runs(runs, ["delay.max"])] == [8, 30, 180, 1024]


def test_where_compares_numbers_numerically(tmp_path):
    runs = [load_run(write_run(tmp_path / f"{i}.h5", [1, 0.5], **{"method.lr": lr})) for i, lr in enumerate((0.015625, 0.5))]
    assert [r.lr for r in filter_runs(runs, parse_where(["method.lr=1.5625e-2"]))] == [0.015625]
    assert [r.lr for r in filter_runs(runs, parse_where(["method.name=RPD"]))] == [0.015625, 0.5]


def test_parse_keys():
    assert parse_keys("method.name, delay.max") == ["method.name", "delay.max"]
    assert parse_keys(None) == []
    with pytest.raises(AnalysisError):
        parse_keys("method.name,,delay.max")


def test_stale_h5_prints_status_and_keys(binary_runs):
    r = script("stale_h5.py", binary_runs["d8_lr0.015625_s1"], "--key", "delay.max")
    assert r.returncode == 0, r.stderr
    assert "status ok" in r.stdout and "delay.max = 8" in r.stdout


def test_summary_names_groups_whose_seeds_change_nothing(tmp_path):
    # δ = 8: three seeds with one and the same curve (the seed drew nothing); δ = 60: a spread
    files = []
    for seed in (0, 1, 2):
        files.append(write_run(tmp_path / f"a{seed}.h5", decaying(1.0), seed=seed, delay={"name": "uniform", "max": 8}))
        files.append(write_run(tmp_path / f"b{seed}.h5", decaying(1.0 + seed / 10), seed=seed,
                               delay={"name": "uniform", "max": 60}))
    r = script("summarize_runs.py", *files, "--group-by", "delay.max")
    assert r.returncode == 0, r.stderr
    notes = [line for line in r.stdout.splitlines() if "seed changes nothing" in line]
    assert len(notes) == 1 and "delay.max=8" in notes[0] and "delay.max=60" not in notes[0]
