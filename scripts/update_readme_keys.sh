#!/usr/bin/env bash
# Regenerates the config-key table (KEYS markers, `stale keys --markdown`) and the component
# table (COMPONENTS markers, `stale list --markdown`) in README.md; tests/cli checks both.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${STALE_BIN:-build/stale}
table=$("$bin" keys --markdown)
components=$("$bin" list --markdown)
python3 - "$table" "$components" <<'PY'
import sys, re
table, components = sys.argv[1], sys.argv[2]
text = open("README.md").read()
for marker, body in (("KEYS", table), ("COMPONENTS", components)):
    text = re.sub(r"(<!-- " + marker + r":BEGIN.*?-->\n).*?(<!-- " + marker + r":END -->)",
                  lambda m: m.group(1) + body + "\n" + m.group(2), text, flags=re.S)
open("README.md", "w").write(text)
PY
echo "README.md key and component tables updated" >&2
