#!/usr/bin/env python3
"""Every number results/THEORY.md quotes in a row's "measured" cell is in the file the row names
(issue 53): a number written with d significant digits must equal, rounded to d digits, some number
of one of the results files the cell cites (results/NAME.md). Derived figures (a ratio the prose
computes, "500× below") are named in the row's DERIVED entry below, or the check fails.

    python3 scripts/check_theory_numbers.py              # exit 1 naming each unmatched number
    python3 scripts/check_theory_numbers.py --rows 1 2   # only these rows

Numbers of 1 or 2 digits without a decimal point (S = 4, 3 seeds, 20 seeds) are not checked: they
name the setting more often than they quote a result. The check's power: a number matches any number
of the cited files that rounds to it, so a changed number with few digits can be missed where the
files hold another that rounds to it (row 2's 0.012 changed to 0.017 is; to 0.013 or 0.019, caught).
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMBER = re.compile(r"(?<![\w.⁰¹²³⁴⁵⁶⁷⁸⁹^])[−-]?\d+(?:\.\d+)?(?:e[−+-]?\d+)?(?![\w.⁰¹²³⁴⁵⁶⁷⁸⁹])")
# numbers a row computes from its files rather than quotes (kept short: each is a decision)
DERIVED = {
    "1": {"10", "100"},
    "2": {"80"},
    "3": {"2.5"},  # decades of K: log10(10⁵/300)
    "12": {"0.031"},  # the sign test's 1/32
    "5b": {"4.6"},  # percent above G: the ratio 1.046
    "23": {"2.9", "3.2"},  # γ_max·L·S: the predicted γ_max·L times S, S = 3 … 16
}


def numbers(text: str) -> list[str]:
    return [m.group(0).replace("−", "-") for m in NUMBER.finditer(text)]


def digits(s: str) -> int:
    mant = s.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    return max(1, len(mant))


def matches(q: str, pool: list[float]) -> bool:
    v = float(q)
    d = digits(q)
    for x in pool:
        if x == v:
            return True
        if x != 0 and v != 0 and math.isfinite(x):
            # x rounded to d significant digits equals v (as written)
            e = math.floor(math.log10(abs(x)))
            if round(x, d - 1 - e) == v or abs(x - v) <= 0.5 * 10 ** (e - d + 1) * 1.0000001:
                return True
    return False


def rows(theory: str):
    for line in theory.splitlines():
        if not line.startswith("| ") or line.startswith("| #") or line.startswith("|---"):
            continue
        cells = line.split(" | ")
        if len(cells) != 7:
            continue
        yield cells[0].lstrip("| ").strip(), cells[4]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", nargs="*", help="row numbers to check (default: every row that cites a file)")
    ap.add_argument("--theory", default=os.path.join(ROOT, "results", "THEORY.md"))
    a = ap.parse_args(argv)
    text = open(a.theory, encoding="utf-8").read()
    problems, checked = [], 0
    for num, measured in rows(text):
        if a.rows and num not in a.rows:
            continue
        cited = sorted(set(re.findall(r"results/([\w.-]+\.md)", measured)))
        if not cited:
            continue
        pool = []
        for name in cited:
            path = os.path.join(ROOT, "results", name)
            if not os.path.exists(path):
                problems.append(f"row {num}: cites results/{name}, which does not exist")
                continue
            pool += [float(x) for x in numbers(open(path, encoding="utf-8").read())]
        quoted = [q for q in numbers(re.sub(r"results/[\w.-]+\.md", "", measured))
                  if "." in q or "e" in q or len(q.lstrip("-")) > 2]
        for q in quoted:
            checked += 1
            if q.lstrip("-") in DERIVED.get(num, set()) or matches(q, pool):
                continue
            problems.append(f"row {num}: {q} is in none of {', '.join(cited)}")
    for p in problems:
        print(p)
    print(f"check_theory_numbers: {checked} quoted numbers checked, {len(problems)} not found in their files")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
