"""plot_schedule.py draws both a schedule file and a training run's /schedule group."""
from __future__ import annotations

import subprocess

from conftest import script


def test_timeline_of_a_training_run(binary_runs, tmp_path):
    out = tmp_path / "pd.png"
    r = script("plot_schedule.py", binary_runs["pipedream"], "-o", out)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size > 0


def test_timeline_of_a_schedule_file(stale_bin, tmp_path):
    h5 = tmp_path / "pd4.h5"
    r = subprocess.run([stale_bin, "schedule", "pipedream", "--stages", "4", "--microbatches", "12", "--out", str(h5)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = script("plot_schedule.py", h5, "-o", tmp_path / "pd4.png")
    assert r.returncode == 0, r.stderr


def test_a_run_without_a_schedule_is_one_line(binary_runs, tmp_path):
    r = script("plot_schedule.py", binary_runs["d0_lr0.015625_s0"], "-o", tmp_path / "x.png")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "no /schedule group" in r.stderr


def test_v_placements_and_fb_pairs_are_drawn(stale_bin, tmp_path):
    """zb-v and dualpipev: the rows name the blocks each device holds (d and 2S - 1 - d)."""
    import matplotlib
    matplotlib.use("Agg")
    from plot_schedule import load
    for name in ("zb-v", "dualpipev"):
        h5 = tmp_path / f"{name}.h5"
        r = subprocess.run([stale_bin, "schedule", name, "-S", "4", "-M", "16", "-a", "8", "--out", str(h5)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        ops, info = load(h5)
        held = [sorted(set(int(b) for b in ops["block"][ops["stage"] == s])) for s in range(4)]
        assert held == [[0, 7], [1, 6], [2, 5], [3, 4]]
        assert bool((ops["flags"] & 4).any()) == (name == "dualpipev")
        r = script("plot_schedule.py", h5, "-o", tmp_path / f"{name}.png")
        assert r.returncode == 0, r.stderr
        assert (tmp_path / f"{name}.png").stat().st_size > 0
