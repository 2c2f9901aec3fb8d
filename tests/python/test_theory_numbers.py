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
    assert r.returncode == 1 and ("row 2: 0.019 is in none of CERTIFICATES.md, audit_informative.md, "
                                  "audit_nonconvex.md") in r.stdout
    # the certified worst case beside the bound (rows 2, 5, 6 quote results/CERTIFICATES.md): a changed one fails too
    assert "the deterministic bound is 8.38–395.1× the worst case" in text
    cert = tmp_path / "cert.md"
    cert.write_text(text.replace("the deterministic bound is 8.38–395.1× the worst case",
                                 "the deterministic bound is 8.38–359.1× the worst case"), encoding="utf-8")
    r = script("check_theory_numbers.py", "--theory", cert)
    assert r.returncode == 1 and "row 6: 359.1 is in none of CERTIFICATES.md, audit_stages_regime.md" in r.stdout
    gone = tmp_path / "gone.md"
    gone.write_text(text.replace("(results/audit_tuned_rate.md)", "(results/no_such_audit.md)"), encoding="utf-8")
    r = script("check_theory_numbers.py", "--theory", gone)
    assert r.returncode == 1 and "row 3: cites results/no_such_audit.md, which does not exist" in r.stdout
