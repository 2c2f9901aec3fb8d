"""The analysis layer every script in scripts/ is a thin command line over, from the package:
reading run files and sweep folders, grouping runs by config keys, deciding which runs
diverged, the step-size rule of docs/theory.md §8, the exponent fits of the audits (§9) and
the metric table. It is the module `stale_analysis` (scripts/stale_analysis/), installed with
the package; its plotting functions are in `stale_analysis.plotting` (matplotlib).

    from stale import analysis
    runs = analysis.load_runs(paths)
    analysis.choose(...)                 # the step-size rule
    analysis.fit_exponent(x, y)          # log-log slope over the positive tail
"""
from stale_analysis import *  # noqa: F401,F403
from stale_analysis import __all__  # noqa: F401
