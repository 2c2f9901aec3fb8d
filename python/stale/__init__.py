"""stale from Python: the harness's runs, schedules, sweeps and stability predictor in-process.

    import stale
    r = stale.run("experiments/quickstart.toml", **{"delay.max": 8})   # in memory, no file
    r.metrics.tail()              # pandas DataFrame: k, subopt, grad_norm_sq, bound, ...
    r.iterates, r.delays          # numpy arrays, as the run file would hold them
    stale.run(cfg, X=X, y=y)      # least squares / logistic regression on your own arrays
    stale.run(cfg, model=m)       # your own stage-wise model (stale.StageModel, stale.torch)
    stale.schedule("pipedream", stages=4, microbatches=16).delays
    stale.sweep("experiments/e1_sweep.toml", out="sweeps/e1", jobs=2)   # the index DataFrame
    stale.stability(cfg, lr=[0.01, 0.02])                              # ρ and γ_max
    stale.objective(cfg)["X"], stale.objective(cfg)["f_star"]           # the data and constants
    stale.components("methods"), stale.keys("delay"), stale.schema()    # stale list / keys / schema
    stale.certify(cfg, function_class="nonconvex", L=1.0)              # PEP worst case of the read pattern
    stale.analysis.choose(...), stale.analysis.fit_exponent(x, y)        # the scripts' analysis layer

A config is a TOML file path, or a dict (nested sections or dotted keys); overrides are keyword
arguments, dotted keys passed as **{"method.lr": 0.01} or with "__" for the dot
(method__lr=0.01). Bad input raises stale.ConfigError (a ValueError) with the CLI's one-line
message. The C++ work runs with the interpreter lock released.
"""
from ._stale import ConfigError, cpu_target, git_sha, toolchain, version as __version__
from .results import Run, load, load_sweep
from .api import components, keys, objective, run, schedule, schema, stability, sweep, Schedule
from .model import StageModel, batch_offsets
from . import analysis
from .certify import certify  # needs the extra [certify] (PEPit, cvxpy) only when called

__all__ = ["ConfigError", "Run", "Schedule", "StageModel", "analysis", "batch_offsets", "certify", "components", "keys", "load", "load_sweep", "objective", "run", "schedule", "schema", "stability", "sweep",
           "__version__", "cpu_target", "git_sha", "toolchain"]
