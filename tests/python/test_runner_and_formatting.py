"""The experiment scripts' one runner (scripts/stale_analysis/runner.py) and number format
(formatting.py): a failing child is one line naming the command and the binary's own error,
an existing output is kept when resuming, and each table's word for a missing value is kept."""
from __future__ import annotations

import math
import os

import pytest

from conftest import ROOT
from stale_analysis import AnalysisError, runner
from stale_analysis.formatting import number

BIN = os.environ.get("STALE_BIN", os.path.join(ROOT, "build", "stale"))
needs_bin = pytest.mark.skipif(not os.access(BIN, os.X_OK), reason="needs the stale binary (STALE_BIN)")


def test_number_keeps_each_tables_word_for_what_is_not_finite():
    assert number(0.123456) == "0.123" and number(123456.0, 4) == "1.235e+05" and number(3, 2) == "3"
    assert number(None) == "–" and number(math.nan, missing="n/a") == "n/a"
    assert number(math.inf, missing="—", inf="∞") == "∞" and number(-math.inf, missing="—", inf="∞") == "—"
    assert number(math.inf, 4, missing="inf") == "inf" and number("as is") == "as is"


@needs_bin
def test_a_failing_run_is_one_line_naming_the_command_and_the_binarys_error(tmp_path):
    with pytest.raises(AnalysisError) as e:
        runner.run(BIN, os.path.join(ROOT, "experiments", "quickstart.toml"), "method.lr=-1",
                   out=str(tmp_path / "x.h5"))
    msg = str(e.value)
    assert "\n" not in msg and "method.lr=-1" in msg and "failed (exit 2)" in msg and "method.lr" in msg.split(": ", 1)[1]
    assert not (tmp_path / "x.h5").exists()


@needs_bin
def test_resume_keeps_an_existing_output_and_a_missing_binary_says_how_to_fix(tmp_path):
    out = tmp_path / "pd.h5"
    runner.schedule(BIN, "pipedream", 4, 16, str(out))
    before = out.stat().st_mtime_ns
    runner.schedule(BIN, "pipedream", 4, 16, str(out))  # resume: kept
    assert out.stat().st_mtime_ns == before
    with pytest.raises(AnalysisError, match="cannot start it.*bash scripts/build.sh"):
        runner.stale(str(tmp_path / "no-such-stale"), "info")
