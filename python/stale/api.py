"""The calls: stale.run, stale.schedule, stale.sweep, stale.stability (each one C++ call of
python/stale_module.cpp with the interpreter lock released) and the listings stale.components,
stale.keys, stale.schema — each a function of the command layer (src/commands/) that the CLI
calls too, so both front ends refuse the same input with the same line."""
from __future__ import annotations

import contextlib
import math
import os
import sys
import tempfile

import numpy as np

from . import _stale
from .config import resolve, sweep_toml
from .results import Run, load, load_sweep


def run(config=None, out=None, *, X=None, y=None, w_true=None, model=None, resume=None, force=False, progress=False,
        drop_unread=False, **overrides) -> Run:
    """Run one config in this process and return its Run.

    config: a TOML path or a dict (None: the defaults); overrides: config keys as keyword
    arguments (**{"method.lr": 0.01} or method__lr=0.01); a key given as None is unset (its
    default, as if never given), and drop_unread=True drops every key the run would not read
    (switching method.name leaves the old method's keys behind). Without `out` nothing is written and
    the arrays come from memory; with `out` the run file is written there (as `stale run
    --out`; an existing file needs force=True) and read back. X, y (and optionally w_true):
    least squares (objective.name = "quadratic") or logistic regression on these arrays instead
    of a generator; X is used as float64 (a Fortran-ordered float64 X is copied once, straight
    into the model's matrix), labels ±1 or 0/1 for logistic.

    model: a stage-wise model defined in Python (stale.StageModel, or stale.torch.TorchStages
    over PyTorch modules; README "Your own model"): every method runs on it; the config's
    objective.name becomes "python" and objective.stages the model's stage count.
    resume: a RUN.h5.partial (or its RUN.h5) to continue from its checkpoint (as `stale run
    --resume`, through the same command layer: its config and path are the run's, so a config,
    overrides or `out` with it are refused); a run of a Python model needs the same model again.
    Returns the finished run file's Run.
    """
    from .model import _Driver
    driver = None
    if model is not None:
        driver = model if isinstance(model, _Driver) else _Driver(model)
    path, _, assigns = resolve(config, overrides)
    arrays = {}
    if X is not None or y is not None:
        if X is None or y is None:
            raise _stale.ConfigError("stale.run: pass both X and y, or neither")
        if np.iscomplexobj(X) or np.iscomplexobj(y):
            raise _stale.ConfigError("X, y: complex values; the linear models take real data (numpy would drop the "
                                     "imaginary part): pass X.real, or split real and imaginary parts into features")
        arrays["X"] = np.asarray(X, dtype=np.float64)
        arrays["y"] = np.ravel(np.asarray(y, dtype=np.float64))
        if arrays["X"].ndim != 2:
            raise _stale.ConfigError(f"X, y: X has shape {arrays['X'].shape}, expected a 2-D n × d matrix")
        if w_true is not None:
            arrays["w_true"] = np.ravel(np.asarray(w_true, dtype=np.float64))
    # what goes with a resume (nothing: the .partial has its config and path) is the command
    # layer's to refuse, as for `stale run --resume`
    out_text, resume_text = _path_text("stale.run", "out", out), _path_text("stale.run", "resume", resume)
    # a Python model's calls all happen inside its run context (stale.torch: torch's thread count)
    with driver.running() if driver is not None else contextlib.nullcontext():
        fields = _stale.run(path, assigns, out_text, _flag("stale.run", "force", force),
                            _flag("stale.run", "progress", progress), _flag("stale.run", "drop_unread", drop_unread),
                            **arrays, model=driver, resume=resume_text)
    if out is not None or resume is not None:
        return load(fields["path"])
    return Run(fields)


class Schedule:
    """A simulated pipeline schedule: `.makespan`, `.bubble_fraction`, per stage `.bubble`,
    `.busy`, `.peak_inflight` (activations held), `.peak_versions` (weight versions stored);
    `.timeline` (DataFrame: one row per op, stage, block, kind 0/1/2 = F/B/W, microbatch,
    start, end), `.delays` [K × blocks] (the delay of every block at every update, in serial
    order), `.delay_summary` / `.steady_delay_summary`."""

    KINDS = ("F", "B", "W")

    def __init__(self, fields: dict):
        self._fields = fields
        for k, v in fields.items():
            if k != "timeline":
                setattr(self, k, v)

    @property
    def timeline(self):
        import pandas as pd
        return pd.DataFrame(self._fields["timeline"])

    def plot(self, ax=None, max_ops: int = 20000):
        """The timeline as a Gantt chart (one row per stage; F, B, W coloured), on `ax` or a
        new figure; returns the axes."""
        import matplotlib.pyplot as plt
        t = self._fields["timeline"]
        if ax is None:
            _, ax = plt.subplots(figsize=(10, 0.4 * self.stages + 1.2))
        colors = {0: "#4c72b0", 1: "#dd8452", 2: "#55a868"}
        n = min(len(t["start"]), max_ops)
        for kind, name in enumerate(self.KINDS):
            sel = np.nonzero(t["kind"][:n] == kind)[0]
            if len(sel) == 0:
                continue
            ax.barh(t["stage"][sel], t["end"][sel] - t["start"][sel], left=t["start"][sel], height=0.8,
                    color=colors[kind], edgecolor="white", linewidth=0.3, label=name)
        ax.set_yticks(range(self.stages))
        ax.invert_yaxis()
        ax.set_xlabel("simulated time")
        ax.set_ylabel("stage")
        ax.set_title(f"{self.name}: S={self.stages}, M={self.microbatches}, bubble {self.bubble_fraction:.3f}")
        ax.legend(loc="upper right", fontsize="small")
        return ax

    def __repr__(self) -> str:
        d = self.delay_summary
        return (f"<stale.Schedule {self.name}: stages={self.stages} microbatches={self.microbatches} "
                f"makespan={self.makespan:.6g} bubble={self.bubble_fraction:.4f} updates={self.total_updates} "
                f"delay max={d['max_delay']} mean={d['mean_delay']:.4f}>")


def _whole(call: str, name: str, v, low: int = 0, high: int = 2 ** 31 - 1) -> int:
    """an integer argument as the C++ side takes it: a whole number in [low, high] (an int, a
    numpy integer or a float without a fraction); else a one-line ConfigError (2.7 was truncated to
    2, and 2**40 gave a multi-line signature dump)"""
    whole = isinstance(v, (int, np.integer)) and not isinstance(v, bool)
    if isinstance(v, (float, np.floating)):
        whole = math.isfinite(v) and float(v).is_integer()
    if not whole:  # the full int range: the command checks the range itself, in its own words
        span = "" if low == -2 ** 31 else f" from {low} to {high}"
        raise _stale.ConfigError(f"{call}: {name} = {v!r}; give a whole number{span}")
    n = int(v)
    if not low <= n <= high:
        raise _stale.ConfigError(f"{call}: {name} = {n}; give a whole number from {low} to {high}")
    return n


def _real(call: str, name: str, v, positive: bool = False) -> float:
    """a real argument: a finite int/float/numpy real (positive when asked); strings, complex
    numbers, NaN and infinities are a one-line ConfigError instead of a TypeError or a silent cast"""
    ok = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
    x = float(v) if ok else math.nan
    if not ok or not math.isfinite(x) or (positive and x <= 0):
        raise _stale.ConfigError(f"{call}: {name} = {v!r}; give a finite"
                                 f"{' positive' if positive else ''} real number")
    return x


def _path_text(call: str, name: str, v) -> str:
    """a path argument as text ("" for None); bytes, other types and an empty path are a one-line
    ConfigError (out="" read as no path, and the run's file was then looked up and not found)"""
    if v is None:
        return ""
    if not isinstance(v, (str, os.PathLike)) or isinstance(os.fspath(v), bytes):
        raise _stale.ConfigError(f"{call}: {name} = {v!r}; give a path as a str or os.PathLike (not {type(v).__name__})")
    if not os.fspath(v):
        raise _stale.ConfigError(f"{call}: {name} = ''; give a file path, or leave {name} out")
    return os.fspath(v)


def _flag(call: str, name: str, v) -> bool:
    """a yes/no argument: a bool, numpy's bool or 0/1; anything else (an array, whose truth is
    ambiguous, a string such as "false") is a one-line ConfigError rather than bool(v)"""
    if isinstance(v, (bool, np.bool_)) or (isinstance(v, (int, np.integer)) and v in (0, 1)):
        return bool(v)
    raise _stale.ConfigError(f"{call}: {name} = {v!r}; give True or False")


def schedule(name: str, stages: int, microbatches: int, *, accumulation: int = 0, replicas: int = 0,
             local_steps: int = 0, chunks: int = 0, steady_margin: int = -1, out=None, trace=None,
             delay_table=None, **costs) -> Schedule:
    """Simulate a schedule (as `stale schedule NAME --stages S --microbatches M`); costs are the
    cost model's keys (forward, backward, weight: one value or one per stage; latency, jitter,
    straggler_prob, straggler_slowdown, seed). `out`: also write the schedule file; `trace`: a
    Chrome trace. `delay_table`: the full K × blocks delay tables (None: kept when they hold at
    most 10 million entries, else `delays` is None; True: always, memory permitting). The same
    memory guard as the CLI refuses a schedule that cannot fit, in one line."""
    settings = []
    for k, v in costs.items():
        if isinstance(v, (list, tuple, np.ndarray)):
            v = ",".join(repr(_real("stale.schedule", k, x)) for x in v)  # per stage: real numbers, one each
        settings.append(f"{k}={v}")
    w = lambda key, v, low=0: _whole("stale.schedule", key, v, low)  # noqa: E731
    fields = _stale.schedule(name, w("stages", stages, 1), w("microbatches", microbatches, 1), w("accumulation", accumulation),
                             w("replicas", replicas), w("local_steps", local_steps), w("chunks", chunks), settings,
                             w("steady_margin", steady_margin, -1), _path_text("stale.schedule", "out", out),
                             _path_text("stale.schedule", "trace", trace),
                             None if delay_table is None else _flag("stale.schedule", "delay_table", delay_table))
    return Schedule(fields)


def sweep(spec, out=None, *, jobs: int = 0, ensemble: int = 8, shard: str = "0/1", progress: bool = False,
          model=None, **overrides):
    """Run a sweep in this process (the command of `stale sweep`: worker threads, runs named by
    config hash, finished runs skipped) and return its index as a DataFrame.

    spec: a sweep TOML path, or a dict {"base": path or config dict, "set": {...},
    "grid": {key: [values]}, "zip": {key: [values]}, "unread": "drop", "epsilon": ...};
    out: the sweep folder (default: sweeps/<sweep file stem>; required for a dict);
    jobs: runs at once (0: one per core, else 1 to 1024; --jobs); ensemble: most runs per
    lockstep ensemble (1 to 64; --ensemble); shard: "i/N", this call's share of the grid
    (--shard); overrides: keys applied to every run, like [set].

    model: a model defined in Python (as stale.run's model=): every run of the grid is a run of
    it (objective.name = "python"), one after another in this thread (a model serves one run at
    a time), each written to the sweep folder under its config hash like any sweep's; a run
    killed earlier continues from its .partial. The index, the step-size rule and the report read
    the folder as any other sweep's."""
    from .config import assignments, key_of
    extra = assignments({key_of(k): v for k, v in overrides.items()})
    out_text = _path_text("stale.sweep", "out", out)
    # whole numbers here; their ranges are the command's (the same line as `stale sweep --jobs`)
    n_jobs, n_ensemble = _whole("stale.sweep", "jobs", jobs, -2 ** 31), _whole("stale.sweep", "ensemble", ensemble, -2 ** 31)
    if not isinstance(shard, str):
        raise _stale.ConfigError(f"stale.sweep: shard = {shard!r}; give it as text \"i/N\", e.g. \"0/4\"")
    progress = _flag("stale.sweep", "progress", progress)
    created, before = False, None  # what this call made before the sweep was accepted: removed if it is refused
    if isinstance(spec, dict):
        if out is None:
            raise _stale.ConfigError("stale.sweep: a sweep given as a dict needs out= (the sweep folder)")
        created = not os.path.isdir(out_text)
        os.makedirs(out_text, exist_ok=True)
        before = set(os.listdir(out_text))
        path = os.path.join(out_text, "sweep.toml")
        with open(path, "w") as f:
            f.write(sweep_toml(spec, out_text))  # sweep.toml, and base.toml for a dict base
    else:
        path = _path_text("stale.sweep", "spec", spec)
    try:
        if model is not None:
            return _sweep_model(path, extra, out_text, shard, progress, model)
        summary = _stale.sweep(path, extra, out_text, n_jobs, n_ensemble, shard, progress, False)
    except _stale.ConfigError:
        # a refused sweep leaves nothing behind (README: failures create no files): the spec's
        # files this call wrote go, and the folder if this call made it; once runs exist it stays
        if before is not None and not os.path.isdir(os.path.join(out_text, "runs")):
            for name in set(os.listdir(out_text)) - before:
                if os.path.isfile(os.path.join(out_text, name)):
                    os.remove(os.path.join(out_text, name))
            if created and not os.listdir(out_text):
                os.rmdir(out_text)
        raise
    index = load_sweep(os.path.dirname(summary["index_csv"]) or ".")
    index.attrs["summary"] = {k: summary[k] for k in ("total", "ran", "skipped", "failed")}
    return index


def _sweep_model(path: str, extra: list, out_text: str, shard: str, progress: bool, model):
    """stale.sweep(model=...): the grid as `stale sweep` plans it, each run made by stale.run with
    the model, then the index written by the command (index_only), as for the CLI's runs"""
    from .model import _Driver
    driver = model if isinstance(model, _Driver) else _Driver(model)
    stages = _whole("stale.sweep", "model.stages", getattr(model, "stages", None), 1)
    extra = extra + ['objective.name="python"', f"objective.stages={stages}"]
    plan = _stale.sweep_plan(path, extra, shard)
    folder = out_text or os.path.join("sweeps", os.path.splitext(os.path.basename(path))[0])
    for sub in ("runs", "configs", "logs"):
        os.makedirs(os.path.join(folder, sub), exist_ok=True)
    counts = {"ran": 0, "skipped": 0, "failed": 0}
    todo = [r for r in plan if r["duplicate_of"] < 0]
    for i, r in enumerate(todo):
        run_file = os.path.join(folder, "runs", r["hash"] + ".h5")
        if os.path.exists(run_file):
            try:
                load(run_file)
                counts["skipped"] += 1
                continue
            except _stale.ConfigError:  # a finished name on a file that does not open: run again
                os.replace(run_file, run_file + ".unreadable")
        config_file = os.path.join(folder, "configs", r["hash"] + ".toml")
        with open(config_file, "w") as f:
            f.write(f"# sweep {path}, grid position {r['position']}\n" + r["config"])
        try:
            if os.path.exists(run_file + ".partial"):
                done = run(resume=run_file + ".partial", model=driver)
            else:
                done = run(config_file, out=run_file, model=driver)
            line, ok = repr(done), True
        except _stale.ConfigError as e:
            line, ok = f"error: {e}", False
        with open(os.path.join(folder, "logs", r["hash"] + ".log"), "w") as f:
            f.write(line + "\n")
        counts["ran" if ok else "failed"] += 1
        if progress:
            print(f"[{i + 1}/{len(todo)}] {' '.join(f'{k}={v}' for k, v in r['values'])}: {line}", file=sys.stderr)
    summary = _stale.sweep(path, extra, folder, 1, 1, shard, False, False, True)
    index = load_sweep(os.path.dirname(summary["index_csv"]) or ".")
    index.attrs["summary"] = {"total": len(plan), **counts}
    return index


def stability(config=None, lr=None, *, order: str = "expected", solver: str = "auto", dense_max: int = 1500,
              gamma_max: bool = True, rel_tol: float = 1e-10, **overrides) -> dict:
    """The stability predictor of `stale stability` on a quadratic: the spectral radius ρ of the
    one-period recursion at each step size in `lr` (default: method.lr), per update
    (ρ^(1/period)), and, unless gamma_max=False, the largest stable step γ_max (bisection on
    ρ ≤ 1). Returns a dict: L, mu, state_dim, period, pattern, solver, lr, rho, rho_per_update,
    converged, gamma_max, gamma_max_L, rho_below, rho_above, evaluations."""
    path, text, assigns = resolve(config, overrides)
    lrs = [] if lr is None else [_real("stale.stability", "lr", x, positive=True)
                                  for x in (lr if isinstance(lr, (list, tuple, np.ndarray)) else [lr])]
    for name, v in (("order", order), ("solver", solver)):
        if not isinstance(v, str):
            raise _stale.ConfigError(f"stale.stability: {name} = {v!r}; give it as text (see `stale stability --help`)")
    return _stale.stability(path, text, assigns, lrs, order, solver, _whole("stale.stability", "dense_max", dense_max, 1),
                            _flag("stale.stability", "gamma_max", gamma_max), _real("stale.stability", "rel_tol", rel_tol, positive=True))


def objective(config=None, **overrides) -> dict:
    """The objective of a config as arrays, exactly as a run of it sees them (what a twin built
    elsewhere needs; a config of an objective without an export is refused, naming those with one). The linear models (quadratic,
    logistic): X [n × d] (None for data stored sparse, objective.storage: then X_csr holds
    indptr, indices, data and shape, scipy.sparse.csr_matrix's arrays), y (logistic: {0, 1}),
    the sample weights and batch offsets of the fixed batch partition, w_true (when known), L,
    μ, f_*, w_* (least squares), the block sizes, the description. The char-GPT (charlm): its
    shape V, E, NH, T, B, S, every training batch's tokens (inputs, targets [M × B·T]), the block
    offsets and the initial point w0 (float64)."""
    path, text, assigns = resolve(config, overrides)
    return _stale.objective(path, text, assigns)


def components(family: str | None = None) -> dict:
    """The registered components, as `stale list` prints them (the same rows, from
    src/commands/component_catalog.cpp): {family: [row, ...]} for every family — "methods",
    "delays", "objectives", "schedules", "rules" — or only `family`. Every row has name,
    traits (the one line `stale list` prints), keys (the config keys it reads) and summary, and
    its family's facts as data: methods kind, schedule, stash, predict; delays
    simulates_schedule; objectives generators ({generator: [keys]}); schedules flush,
    split_backward, accumulates, default_accumulation, replicated, chunked; rules
    state_per_coordinate. Tests loop over it, so that a new method is covered without an edit."""
    return _stale.components(family or "")


def keys(prefix: str | None = None) -> list:
    """The config keys that start with `prefix` (all of them for None), as `stale keys` prints
    them: [{key, type, default, meaning, choices}], in the schema's order; default is the typed
    value, choices a string key's valid values. A prefix no key starts with raises
    stale.ConfigError naming the closest key."""
    return _stale.keys(prefix or "")


def schema() -> dict:
    """What the outputs hold, as `stale schema` prints it: {"metrics": [{name, dtype, unit,
    description}] (the run file's /metrics series, in its order), "index": [{name, dtype, unit,
    description, from}] (the sweep index's columns; `from` names the /metrics series whose last
    value a column is, or None)}."""
    return _stale.schema()
