#!/usr/bin/env bash
# Regenerates the config-key table in README.md (between the KEYS markers) from the schema
# (`stale keys --markdown`); tests/cli checks that the README names every key.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${STALE_BIN:-build/stale}
table=$("$bin" keys --markdown)
python3 - "$table" <<'PY'
import sys, re
table = sys.argv[1]
text = open("README.md").read()
new = re.sub(r"(<!-- KEYS:BEGIN.*?-->\n).*?(<!-- KEYS:END -->)", lambda m: m.group(1) + table + "\n" + m.group(2), text, flags=re.S)
open("README.md", "w").write(new)
PY
echo "README.md key table updated" >&2
