"""Where a committed result came from (scripts/stale_analysis/provenance.py): the stamp names the
command, the binary's commit and target and the machine's instruction set in the file and in
the manifest, restamping replaces rather than repeats, and the check catches a file changed
after its stamp, a file never stamped and a row whose file is gone."""
from __future__ import annotations

import os
import platform

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from conftest import script  # noqa: E402
from stale_analysis import provenance  # noqa: E402


def _results(tmp_path):
    d = tmp_path / "results"
    d.mkdir()
    (d / "table.md").write_text("# A table\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n")
    (d / "runs.csv").write_text("a,b\n1,2\n")
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    fig.savefig(d / "fig.png")
    plt.close(fig)
    return d


def test_stamp_states_command_commit_target_and_instruction_set(tmp_path):
    d = _results(tmp_path)
    files = [str(d / n) for n in ("table.md", "runs.csv", "fig.png")]
    provenance.stamp(files, "python3 scripts/make_table.py", str(d), bin=None)
    b = provenance.build(None)
    text = (d / "table.md").read_text()
    last = text.rstrip("\n").splitlines()[-1]
    assert last.startswith("Provenance: made by `python3 scripts/make_table.py` at git ")
    assert b["git"] in last and f"built for {b['target']}" in last
    if platform.machine() == "x86_64":  # elsewhere machine() names the architecture instead of a level
        assert "x86-64" in provenance.machine()
    assert provenance.machine() in last
    assert "| 1 | 2 |" in text  # the content is kept
    # stamping again replaces the line instead of adding a second one
    provenance.stamp([str(d / "table.md")], "python3 scripts/make_table.py --again", str(d), bin=None)
    text = (d / "table.md").read_text()
    assert text.count("Provenance:") == 1 and "--again" in text
    rows = provenance.read_manifest(str(d))
    assert set(rows) == {"table.md", "runs.csv", "fig.png"}
    assert rows["runs.csv"]["command"] == "python3 scripts/make_table.py" and rows["table.md"]["git"] == b["git"]
    from PIL import Image

    with Image.open(d / "fig.png") as im:
        assert im.text["Source"] == "python3 scripts/make_table.py" and b["git"] in im.text["Software"]
    assert provenance.check(str(d)) == []


def test_check_names_a_changed_an_unlisted_and_a_vanished_file(tmp_path):
    d = _results(tmp_path)
    provenance.stamp([str(d / "table.md"), str(d / "runs.csv")], "cmd", str(d), bin=None)
    assert [p.split(":")[0] for p in provenance.check(str(d))] == ["fig.png"]  # never stamped
    provenance.stamp([str(d / "fig.png")], "cmd", str(d), bin=None)
    with open(d / "runs.csv", "a") as f:
        f.write("3,4\n")  # edited by hand after its stamp
    os.remove(d / "fig.png")
    problems = provenance.check(str(d))
    assert any(p.startswith("runs.csv: changed since it was stamped by `cmd`") for p in problems)
    assert any(p.startswith("fig.png: listed in") for p in problems)
    r = script("stamp_results.py", "--check", "--results", d)
    assert r.returncode == 1 and "runs.csv: changed" in r.stderr


def test_stamp_since_stamps_only_what_a_command_wrote(tmp_path):
    d = _results(tmp_path)
    old = d / "runs.csv"
    os.utime(old, (1_000_000, 1_000_000))
    done = provenance.stamp_since(2_000_000, "bash scripts/x.sh", str(d), bin=None)
    assert sorted(os.path.basename(p) for p in done) == ["fig.png", "table.md"]
    assert "runs.csv" not in provenance.read_manifest(str(d))


def test_the_committed_results_are_each_listed_and_unchanged():
    # every file of results/ (but the device logs under results/gpu/) carries its provenance
    root = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "results"))
    assert provenance.check(root) == []


def test_a_file_made_elsewhere_keeps_the_commit_and_machine_that_made_it(tmp_path):
    d = _results(tmp_path)
    r = script("stamp_results.py", "--results", d, "--command", "see the file", "--made-elsewhere",
               "d9b14da,native,16-core lent machine,2026-11-24", d / "table.md")
    assert r.returncode == 0, r.stderr
    row = provenance.read_manifest(str(d))["table.md"]
    assert (row["git"], row["target"], row["machine"]) == ("d9b14da", "native", "16-core lent machine")
    assert "at git d9b14da" in (d / "table.md").read_text() and "2026-11-24" in (d / "table.md").read_text()
    r = script("stamp_results.py", "--results", d, "--command", "x", "--made-elsewhere", "d9b14da", d / "table.md")
    assert r.returncode == 2 and "GIT,TARGET,MACHINE,DATE" in r.stderr


def test_each_file_names_the_script_that_wrote_it_when_two_run_at_once(tmp_path):
    """issue 51, item 8: stamping by modification time (stamp_since) let a script claim the files
    another wrote meanwhile (PROVENANCE.md named trajectory_delays_experiment.py for the stability
    files). written() stamps a file as its writer writes it, with the writer's command."""
    import time
    d = _results(tmp_path)
    provenance.stamp([str(d / "table.md")], "setup", str(d), bin=None)  # the manifest exists
    started_a = time.time() - 1
    (d / "b.md").write_text("# written by B\n")
    provenance.written(str(d / "b.md"), command="python3 scripts/b.py", bin=None)
    (d / "a.md").write_text("# written by A\n")
    provenance.written(str(d / "a.md"), command="python3 scripts/a.py", bin=None)
    rows = provenance.read_manifest(str(d))
    assert rows["a.md"]["command"] == "python3 scripts/a.py" and rows["b.md"]["command"] == "python3 scripts/b.py"
    assert "made by `python3 scripts/b.py`" in (d / "b.md").read_text()
    # a file outside any results folder (runs/, a scratch -o) is left alone
    (tmp_path / "scratch.md").write_text("x\n")
    provenance.written(str(tmp_path / "scratch.md"), command="python3 scripts/a.py", bin=None)
    assert (tmp_path / "scratch.md").read_text() == "x\n"
    # the positive control: A stamping by time claims B's file
    provenance.stamp_since(started_a, "python3 scripts/a.py", str(d), bin=None)
    assert provenance.read_manifest(str(d))["b.md"]["command"] == "python3 scripts/a.py"


def test_two_processes_stamping_at_once_keep_each_others_rows(tmp_path):
    """the manifest is read, changed and written under a lock: 2 processes × 40 files, all 80 rows
    kept (a plain read-modify-write loses rows when the two interleave: without the lock this test
    failed 3 of 4 tries on the 2-core development machine)"""
    import subprocess
    import sys
    d = _results(tmp_path)
    provenance.stamp([str(d / n) for n in ("table.md", "runs.csv", "fig.png")], "setup", str(d), bin=None)
    code = ("import sys; sys.path.insert(0, {scripts!r}); from stale_analysis import provenance\n"
            "for i in range(40):\n"
            "    p = {d!r} + '/' + sys.argv[1] + str(i) + '.csv'\n"
            "    open(p, 'w').write(str(i))\n"
            "    provenance.written(p, command='python3 scripts/' + sys.argv[1] + '.py', bin=None)\n")
    code = code.format(scripts=os.path.join(os.path.dirname(__file__), "..", "..", "scripts"), d=str(d))
    procs = [subprocess.Popen([sys.executable, "-c", code, name]) for name in ("x", "y")]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    rows = provenance.read_manifest(str(d))
    for name in ("x", "y"):
        assert all(rows[f"{name}{i}.csv"]["command"] == f"python3 scripts/{name}.py" for i in range(40))
    assert provenance.check(str(d)) == []
