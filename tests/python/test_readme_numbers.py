"""scripts/check_readme_numbers.py (issue 51, item 9): the README's estimates of time and size
cite the results file that measured them and match it; a changed number, an unsourced one and a
bare table number in the cited file (not written with a unit) are each caught."""
from __future__ import annotations

import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import check_readme_numbers as C  # noqa: E402


def test_the_committed_readme_passes():
    problems, checked = C.problems_of(open(os.path.join(ROOT, "README.md"), encoding="utf-8").read())
    assert problems == [] and checked >= 3


def test_a_changed_an_unsourced_and_a_unitless_number_fail():
    # the CPU minutes PACI.md states now (they change whenever the experiment is rerun)
    total = re.search(r"\*\*total (\d+\.\d) CPU minutes\*\*", open(os.path.join(ROOT, "results", "PACI.md"), encoding="utf-8").read())
    assert total, "results/PACI.md states its total CPU minutes"
    good = f"python3 scripts/paci_experiment.py  # → results/PACI.md (≈ {total.group(1)} CPU min)"
    assert C.problems_of(good) == ([], 1)
    assert "is in none of" in C.problems_of(good.replace(total.group(1), "10"))[0][0]  # PACI.md has a bare 10, not "10 CPU min"
    assert "cites no results file" in C.problems_of("the build takes ~5 min on 2 cores")[0][0]
    assert C.problems_of("the count is 5 runs") == ([], 0)  # not an estimate of time or size
