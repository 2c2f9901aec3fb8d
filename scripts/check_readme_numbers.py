#!/usr/bin/env python3
"""Every estimate of time or size the README gives (≈ 10 CPU min, ~9 s, about 30 s, ≈ 0.5 MB) is
measured, not remembered (issue 51, item 9): its line cites the results file that recorded it
(results/NAME.md, .txt or .csv) and the number is in that file, to the digits written (the rule of
scripts/check_theory_numbers.py). An estimate without a cited file, or one its file does not hold,
fails: measure it with a script that writes the file, or drop the number.

    python3 scripts/check_readme_numbers.py            # exit 1 naming each unsourced or changed number
"""
from __future__ import annotations

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from check_theory_numbers import matches  # noqa: E402  (one rounding rule)

UNIT = r"(?:CPU[- ]?(?:min(?:utes)?|s|seconds|hours)|CPU-minutes|s|sec|seconds|min|minutes|h|hours|MB|KB|GB|MiB|KiB|GiB)"
ESTIMATE = re.compile(r"(?:≈|~|about |around |roughly )\s*(\d+(?:\.\d+)?)\s*" + UNIT + r"(?![\w])")
SOURCE = re.compile(r"results/[\w./-]+\.(?:md|txt|csv)")
# in the cited file, only numbers written with a unit of time or size count (a bare "10" in a
# table would otherwise vouch for "≈ 10 CPU min")
MEASURED = re.compile(r"(\d+(?:\.\d+)?)\s*(?:CPU[- ]?)?(?:s|sec|seconds|min|minutes|CPU|h|hours|MB|KB|GB|MiB|KiB|GiB)\b")


def problems_of(text: str) -> tuple[list[str], int]:
    out, checked = [], 0
    for n, line in enumerate(text.splitlines(), 1):
        found = ESTIMATE.findall(line)
        if not found:
            continue
        cited = SOURCE.findall(line)
        pool = []
        for c in cited:
            path = os.path.join(ROOT, c)
            if os.path.exists(path):
                pool += [float(x) for x in MEASURED.findall(open(path, encoding="utf-8").read())]
            else:
                out.append(f"README.md:{n}: cites {c}, which does not exist")
        for q in found:
            checked += 1
            if not cited:
                out.append(f"README.md:{n}: the estimate {q} cites no results file; cite the file that measured it "
                           "(results/NAME.md on the same line) or drop the number")
            elif not matches(q, pool):
                out.append(f"README.md:{n}: {q} is in none of {', '.join(cited)}")
    return out, checked


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    a = ap.parse_args(argv)
    problems, checked = problems_of(open(a.readme, encoding="utf-8").read())
    for p in problems:
        print(p)
    print(f"check_readme_numbers: {checked} estimates checked, {len(problems)} unsourced or not in their files")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
