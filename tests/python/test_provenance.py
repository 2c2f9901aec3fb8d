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
