"""The §3 bound for every method of a sweep (scripts/stale_analysis/bound.py, `audits.py bound`),
the γ > 1/L mark of summarize_runs.py, the index's bound columns from a real sweep, and the label
"estimated L" wherever a bound used the estimate of L along the run (the char-level GPT)."""
from __future__ import annotations

import csv
import os
import subprocess

import h5py
import pytest

from conftest import decaying, mixed_sweep, script, write_run
from stale_analysis.bound import L_estimated, bound_runs, delta_text, method_table, plot_bound
from stale_analysis.plotting import plt


# --- the bound across methods ----------------------------------------------------------------
def test_bound_runs_read_every_method_with_its_own_delta(tmp_path):
    runs = bound_runs([mixed_sweep(tmp_path / "s")])
    assert sorted({r.method for r in runs}) == ["pipedream", "rpd"]  # PipeDream is no longer dropped
    table = {m["method"]: m for m in method_table(runs)}
    assert table["rpd"]["delta"] == "δ ∈ {8, 60}" and table["pipedream"]["delta"] == "δ = 72"
    assert table["rpd"]["runs"] == 6 and table["rpd"]["checked"] == 4 and table["rpd"]["lr_above_1_over_L"] == 2
    assert table["pipedream"]["checked"] == 1 and table["pipedream"]["diverged"] == 1
    fig, ax = plt.subplots()
    assert plot_bound(ax, runs) == 5
    labels = ax.get_legend_handles_labels()[1]
    plt.close(fig)
    assert "pipedream (δ = 72; 1 runs)" in labels and "rpd (δ ∈ {8, 60}; 4 runs)" in labels


def test_delta_text():
    assert delta_text([72.0, 72.0]) == "δ = 72"
    assert delta_text([60, 8]) == "δ ∈ {8, 60}"
    assert delta_text([4, 8, 16, 32, 64, 1024]) == "δ = 4…1024 (6 values)"
    assert delta_text([float("nan")]) == "δ unknown"


def test_bound_audit_covers_every_method(tmp_path):
    d = mixed_sweep(tmp_path / "s")
    r = script("audits.py", "bound", d, "--results", tmp_path / "res")
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "res" / "audit_bound.md").read_text()
    assert "Runs read (every method): 9; checked at every logged K: 5" in md
    assert "| pipedream | δ = 72 | 3 | 1 | 1 | 1 |" in md and "| rpd | δ ∈ {8, 60} | 6 | 4 | 2 | 0 |" in md


# --- summarize_runs.py: which rows have γ > 1/L -------------------------------------------------
def test_summary_marks_the_rows_with_gamma_above_1_over_L(tmp_path):
    files = [write_run(tmp_path / f"r{lr}_{s}.h5", decaying(1.0), **{"method.lr": lr, "seed": s})
             for lr in (0.0625, 0.5) for s in (0, 1)]
    files.append(write_run(tmp_path / "mixed.h5", decaying(1.0), **{"method.lr": 0.5, "seed": 2, "delay.max": 8}))
    files.append(write_run(tmp_path / "mixed2.h5", decaying(1.0), **{"method.lr": 0.0625, "seed": 2, "delay.max": 8}))
    r = script("summarize_runs.py", *files, "--group-by", "delay.max,method.lr")
    assert r.returncode == 0, r.stderr
    rows = {(c[0], c[1]): c[3] for c in [[x.strip() for x in line.strip("|").split("|")]
                                         for line in r.stdout.splitlines() if line.startswith("| ")][1:]}
    assert rows == {("0", "0.0625"): "yes", ("0", "0.5"): "NO", ("8", "0.0625"): "yes", ("8", "0.5"): "NO"}
    assert "γ > 1/L for 3 of 6 runs (the rows marked NO" in r.stdout
    r = script("summarize_runs.py", *files, "--group-by", "delay.max")  # a group mixing both
    assert "NO for 2 of 4" in r.stdout and "NO for 1 of 2" in r.stdout


def test_the_index_has_the_bound_columns_and_gamma_flag(binary_sweep):
    with open(binary_sweep / "out" / "index.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for c in ("G", "bound_opt", "bound_stoch", "bound_stale", "delta", "lr_within_1_over_L"):
        assert c in rows[0]
    for r in rows:
        if r["bound"]:
            total = float(r["bound_opt"]) + float(r["bound_stoch"]) + float(r["bound_stale"])
            assert total == pytest.approx(float(r["bound"]), rel=1e-15)  # the CSV's 17 digits
        assert r["lr_within_1_over_L"] == ("0" if float(r["method.lr"]) == 100.0 else "1")
    assert {r["method.name"]: r["delta"] for r in rows if r["method.name"] == "rpd"}["rpd"] == "4"


# --- a bound with an estimated L says so ----------------------------------------------------------
EST = "estimated (secant over consecutive logged iterates)"


def test_a_bound_with_an_estimated_L_is_labelled_in_the_summary_table_and_the_method_table(tmp_path):
    est = [write_run(tmp_path / f"e{s}.h5", decaying(1.0), L=20.0, L_source=EST, **{"delay.max": 8, "seed": s})
           for s in (0, 1)]
    cert = [write_run(tmp_path / f"c{s}.h5", decaying(1.0), L_source="certified", **{"delay.max": 0, "seed": s})
            for s in (0, 1)]
    old = write_run(tmp_path / "old.h5", decaying(1.0), **{"delay.max": 0, "seed": 2})  # no L_source: certified
    r = script("summarize_runs.py", *est, *cert, old, "--group-by", "delay.max")
    assert r.returncode == 0, r.stderr
    rows = {c[0]: c for c in [[x.strip() for x in line.strip("|").split("|")]
                              for line in r.stdout.splitlines() if line.startswith("| ")][1:]}
    assert rows["8"][6].endswith("(estimated L)") and rows["8"][7].endswith("(estimated L)")  # bound, stale term
    assert "estimated" not in rows["0"][6]
    assert "L estimated along the run for 2 of 5 runs (a lower estimate of L" in r.stdout
    assert L_estimated({"L_source": EST}) and not L_estimated({"L_source": "certified"}) and not L_estimated({})


def test_method_table_and_legend_say_estimated_L(tmp_path):
    d = tmp_path / "s"
    os.makedirs(d / "runs")
    rows = []
    for i, (name, src) in enumerate((("charlm-rpd", EST), ("charlm-rpd", EST), ("rpd", "certified"))):
        rel = f"runs/r{i}.h5"
        write_run(d / rel, decaying(1.0), L=2.0, L_source=src, **{"method.name": name, "seed": i})
        rows.append({"run": f"r{i}", "position": i, "method.name": name, "seed": i, "status": "ok", "path": rel})
    with open(d / "index.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    runs = bound_runs([str(d)])
    table = {m["method"]: m for m in method_table(runs)}
    assert table["charlm-rpd"]["L"] == "estimated" and table["rpd"]["L"] == "certified"
    fig, ax = plt.subplots()
    plot_bound(ax, runs)
    labels = ax.get_legend_handles_labels()[1]
    plt.close(fig)
    assert "charlm-rpd (δ = 0; 2 runs; estimated L)" in labels and "rpd (δ = 0; 1 runs)" in labels


def test_a_real_charlm_run_file_is_labelled_estimated_and_summarized_so(stale_bin, tmp_path):
    data = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data")
    env = {**os.environ}
    env.setdefault("STALE_DATA_DIR", os.path.abspath(data))
    if not os.path.exists(os.path.join(env["STALE_DATA_DIR"], "tinyshakespeare.txt")):
        pytest.skip("no tinyshakespeare.txt")
    cfg = tmp_path / "tiny.toml"
    cfg.write_text('seed = 1\nbackend = "cpu"\n[objective]\nname = "charlm"\nembedding = 8\nheads = 2\ncontext = 8\n'
                   'batch_size = 2\nstages = 3\nsamples = 40\n[method]\nname = "pipedream"\nlr = 0.1\nupdates = 60\n'
                   '[log]\nevery = 10\nexact_mean = true\nprogress = false\n')
    out = tmp_path / "c.h5"
    r = subprocess.run([stale_bin, "run", str(cfg), "--out", str(out)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "(estimated L=" in r.stdout
    with h5py.File(out) as f:
        t = f["theory"].attrs
        assert t["L_source"].decode().startswith("estimated (secant") and t["bound_uses_estimated_L"] == 1
        assert t["L"] == t["L_estimate"] and t["exact_mean"] == 1
    s = script("summarize_runs.py", out)
    assert s.returncode == 0, s.stderr
    assert "(estimated L)" in s.stdout and "L estimated along the run for 1 of 1 runs" in s.stdout


def test_seed_replicates_are_marked_only_when_equal_bit_for_bit_and_equal_but_for_the_seed():
    """issue 51, item 6: PipeDream on fixed data runs the same run for every seed; the audit marks
    the repeats (same sweep, same axes but the seed, equal k, mean and bound) and nothing else"""
    import numpy as np
    from stale_analysis.bound import BoundRun, mark_seed_replicates

    def run(name, seed, measured, lr=0.1):
        k = np.arange(1, 4)
        return BoundRun(sweep="s", run=name, axes={"seed": seed, "method.lr": lr}, method="pipedream", delta=3.0, lr=lr,
                        within=True, exact_mean=True, diverged=None, k=k, measured=np.asarray(measured, float),
                        bound=np.ones(3))
    base = [0.1, 0.2, 0.3]
    runs = [run("a", 0, base), run("b", 1, base), run("c", 2, [0.1, 0.2, 0.3 + 1e-16]), run("d", 1, base, lr=0.2),
            run("e", 3, base)]
    mark_seed_replicates(runs)
    assert [r.same_as for r in runs] == [None, "a", None, None, "a"]
