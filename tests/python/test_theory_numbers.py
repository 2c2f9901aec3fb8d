"""scripts/check_theory_numbers.py: every number THEORY.md's verdict table quotes is in the file
its row cites (issue 53). The committed table passes; a number changed in a copy, or a cited file
that does not exist, fails naming the row."""
from __future__ import annotations

import os

from conftest import ROOT, script

THEORY = os.path.join(ROOT, "results", "THEORY.md")


def test_the_committed_table_quotes_its_files():
    r = script("check_theory_numbers.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert ", 0 not found" in r.stdout


def test_a_changed_number_or_a_missing_file_fails_naming_its_row(tmp_path):
    text = open(THEORY, encoding="utf-8").read()
    assert "largest upper bound ÷ bound 0.012" in text  # row 2's quote of results/audit_informative.md
    changed = tmp_path / "THEORY.md"
    changed.write_text(text.replace("largest upper bound ÷ bound 0.012", "largest upper bound ÷ bound 0.019"),
                       encoding="utf-8")
    r = script("check_theory_numbers.py", "--theory", changed)
    assert r.returncode == 1 and "row 2: 0.019 is in none of audit_informative.md, audit_nonconvex.md" in r.stdout
    gone = tmp_path / "gone.md"
    gone.write_text(text.replace("(results/audit_tuned_rate.md)", "(results/no_such_audit.md)"), encoding="utf-8")
    r = script("check_theory_numbers.py", "--theory", gone)
    assert r.returncode == 1 and "row 3: cites results/no_such_audit.md, which does not exist" in r.stdout
