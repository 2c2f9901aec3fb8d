#!/usr/bin/env python3
"""States where committed results came from (scripts/stale_analysis/provenance.py): the command,
the binary's commit and build target and this machine's instruction set, in each file and in
results/PROVENANCE.md. The experiment scripts call it themselves; by hand it is for prose
written from measured files (`--command "hand: …"`) and for checking.

    python3 scripts/stamp_results.py --command "bash scripts/reproduce.sh" --since EPOCH
    python3 scripts/stamp_results.py --command "hand, from results/audit_*.md" results/THEORY.md
    python3 scripts/stamp_results.py --check        # every file listed, none changed since
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_analysis import AnalysisError, provenance, run_cli  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="*", help="result files to stamp")
    p.add_argument("--command", help="the command that made them")
    p.add_argument("--since", type=float, help="stamp every file of --results written since this Unix time")
    p.add_argument("--results", default="results")
    p.add_argument("--bin", default=os.environ.get("STALE_BIN", "build/stale"), help="the binary that computed them")
    p.add_argument("--made-elsewhere", metavar="GIT,TARGET,MACHINE,DATE",
                   help="for files not regenerated here: the commit, build target, machine and date that made them")
    p.add_argument("--check", action="store_true", help="check the manifest against the folder; exit 1 on a problem")
    a = p.parse_args(argv)
    if a.check:
        problems = provenance.check(a.results)
        for x in problems:
            print(f"stamp_results: {x}", file=sys.stderr)
        print(f"stamp_results: {os.path.join(a.results, provenance.MANIFEST)}: "
              f"{'every file listed and unchanged' if not problems else f'{len(problems)} problem(s)'}")
        return 1 if problems else 0
    if not a.command:
        raise AnalysisError("stamp_results: --command is required (the command that made the files)")
    if a.since is not None:
        done = provenance.stamp_since(a.since, a.command, a.results, a.bin)
    else:
        for f in a.files:
            if not os.path.isfile(f):
                raise AnalysisError(f"stamp_results: {f}: no such file")
        facts = None
        if a.made_elsewhere:
            head = a.made_elsewhere.split(",", 2)  # the machine may hold commas: the date is the last field
            parts = head[:2] + head[2].rsplit(",", 1) if len(head) == 3 and "," in head[2] else []
            parts = [x.strip() for x in parts]
            if len(parts) != 4:
                raise AnalysisError("stamp_results: --made-elsewhere wants GIT,TARGET,MACHINE,DATE, e.g. "
                                    "d9b14da,native,16-core lent GPU machine,2026-11-24")
            facts = dict(zip(("git", "target", "machine", "date"), parts), version=provenance.build(a.bin)["version"])
        provenance.stamp(a.files, a.command, a.results, a.bin, facts)
        done = a.files
    print(f"stamp_results: {len(done)} file(s) stamped by `{a.command}`")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
