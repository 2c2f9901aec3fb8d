#!/usr/bin/env bash
# Regenerates the committed results that are cheap to make (seconds on 2 cores) into a
# temporary folder with the project's own commands, and compares every table row and number
# with the committed file. The lines that name the commit, the machine or a wall time are left
# out of the comparison (they are meant to change); anything else that differs is a failure.
#   bash scripts/check_results.sh            # after a build (build/stale)
# Checked: results/main_rpd_delays.md (scripts/main.sh's sweep and table) and
# results/pipedream_delays.md (scripts/pipedream_delays.py). The rest need sweeps of minutes to
# hours (scripts/reproduce.sh, scripts/theory.sh) and say in their files how they were made;
# for all of them results/PROVENANCE.md holds the command, commit, build target, machine and
# SHA-256, checked here (a file edited or left over since its last regeneration fails).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${STALE_BIN:-build/stale}
[[ -x "$bin" ]] || { echo "check_results.sh: $bin does not exist; build first (bash scripts/build.sh)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)

"$bin" sweep experiments/main_rpd_delays_sweep.toml -q --out "$tmp/main_rpd_delays"
python3 scripts/summarize_runs.py "$tmp/main_rpd_delays" --group-by delay.max \
  --command "bash scripts/main.sh" -o "$tmp/main_rpd_delays.md" >/dev/null
python3 scripts/pipedream_delays.py --bin "$bin" --out "$tmp" --jobs "$(nproc)" >/dev/null

# what may differ: provenance (commit, version, machine) and timings
volatile='git|[Hh]arness version|[Ww]all|CPU time|seconds|cpu_target|instruction set|[0-9.]+ s\b'
failed=0
for name in main_rpd_delays.md pipedream_delays.md; do
  if diff <(grep -Ev "$volatile" "results/$name" | sed "/^$/d") <(grep -Ev "$volatile" "$tmp/$name" | sed "/^$/d") >"$tmp/$name.diff"; then
    echo "check_results: results/$name regenerates identically ($(grep -c '^|' "results/$name") table rows)"
  else
    echo "check_results: results/$name differs from what the code makes now:" >&2
    head -20 "$tmp/$name.diff" >&2
    failed=1
  fi
done
# every committed file states where it came from, and none changed since (results/PROVENANCE.md)
python3 scripts/stamp_results.py --check || failed=1
# the README's estimates of time and size cite the file that measured them, and match it
python3 scripts/check_readme_numbers.py || failed=1
echo "check_results.sh: done in $(( $(date +%s) - start )) s" >&2
exit $failed
