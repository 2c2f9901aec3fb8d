"""Run files (HDF5, one per `stale run`): the metrics, the resolved config, the theory
constants, and the rule that decides whether a run diverged."""
from __future__ import annotations

import csv
import ctypes
import difflib
import functools
import math
import os
import re
import tomllib
from collections.abc import Mapping
from functools import cached_property

import h5py
import numpy as np

from .errors import AnalysisError
from .schema import METRIC_NAMES, RUN_SCHEMA_VERSION, SCHEDULE_SCHEMA_VERSION

# A run whose final f − f_* (or loss, when f_* is unknown) exceeds this multiple of its start
# value diverged, whatever its status says (the harness's own threshold, issue #13).
DIVERGENCE_FACTOR = 1e6

# Keys that are not config keys but can be grouped or filtered on like one.
PSEUDO_KEYS = ("status", "file")


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


# What h5py, NumPy and tomllib raise on a damaged or foreign file (h5py: KeyError for an object
# whose header cannot be read, TypeError and ValueError for a dataset of an unexpected shape or
# type): turned into the one-line AnalysisError that names the file, where the file is read.
_DAMAGE = (KeyError, TypeError, ValueError, IndexError, AttributeError, RuntimeError)


def damaged(path: str, e: Exception, what: str = "run file") -> AnalysisError:
    return AnalysisError(f"{path}: a damaged or foreign {what} ({type(e).__name__}: {e})")


def number(path: str, value, what: str) -> float:
    """an attribute's value as a float, or an AnalysisError naming the file and the attribute"""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise AnalysisError(f"{path}: {what} = {value!r} is not a number (a damaged run file?)") from None


def flatten(node: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in node.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, name + "."))
        else:
            out[name] = v
    return out


class _Metrics(Mapping):
    """A run file's /metrics, each series read on first use: a figure reads two or three of the
    sixteen, and reading every series and attribute of ~1,600 run files was most of the
    figures' time in scripts/reproduce.sh. `n` cuts every series to the rows all of them hold
    (a killed .partial may hold one a flush longer than another); None: they are equal."""

    def __init__(self, path: str, names: list[str], n: int | None):
        self._path, self._names, self._n, self._read = path, names, n, {}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._read:
            if name not in self._names:
                raise KeyError(name)
            with open_h5(self._path, "HDF5 run file") as f:
                try:
                    v = f["metrics"][name][()]
                except _DAMAGE as e:
                    raise damaged(self._path, e) from None
            self._read[name] = v if self._n is None else v[:self._n]
        return self._read[name]

    def __contains__(self, name) -> bool:
        return name in self._names

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def _attrs(node) -> dict:
    return {k: _text(v) for k, v in node.attrs.items()}


_REQUIRED = object()


class _Objects:
    """A file's groups and datasets besides /metrics, by their path in the file
    ('delay_summary', 'schedule/start'), each read on the call that asks for it and not kept:
    an op table or the iterates can be large, and a figure holds hundreds of runs. An object
    the file lacks, or one h5py cannot read, is an AnalysisError naming the file."""

    path: str
    what: str  # the kind of file, for the errors

    def _read(self, name: str, kind: type, read, absent=_REQUIRED):
        with open_h5(self.path, f"HDF5 {self.what}") as f:
            try:
                node = f.get(name)
                if node is None:
                    if absent is not _REQUIRED:
                        return absent
                    raise AnalysisError(f"{self.path}: no /{name.strip('/')} in this {self.what}")
                if not isinstance(node, kind):
                    raise AnalysisError(f"{self.path}: /{name.strip('/')} is not a "
                                        f"{'group' if kind is h5py.Group else 'dataset'} (a damaged {self.what}?)")
                return read(node)
            except _DAMAGE as e:
                raise damaged(self.path, e, self.what) from None

    def has(self, name: str) -> bool:
        with open_h5(self.path, f"HDF5 {self.what}") as f:
            try:
                return name in f
            except _DAMAGE as e:
                raise damaged(self.path, e, self.what) from None

    def dataset(self, name: str, index=()) -> np.ndarray:
        """the dataset at `name`, whole or the part `index` selects (read alone: the last
        iterate of a large run is one row), e.g. run.dataset('schedule/start'),
        run.dataset('iterates', slice(-1, None))"""
        return self._read(name, h5py.Dataset, lambda d: d[index])

    def group_attrs(self, name: str) -> dict:
        """the attributes of the group at `name` ('/': the root), text decoded"""
        return self._read(name, h5py.Group, _attrs)


class Run(_Objects):
    """One run file: its status, resolved config, /metrics (read series by series, on first
    use), the attributes of the root, /theory and /objective (read on first use), and any
    other group or dataset through has, dataset and group_attrs (read at each call)."""

    what = "run file"

    def __init__(self, path: str, config_text: str, status: str, metrics: Mapping):
        self.path, self._config_text, self.status, self.metrics = path, config_text, status, metrics

    def _read_attrs(self, group: str) -> dict:
        # a file without /theory or /objective reads as having no constants (the callers' .get defaults)
        return self._read(group, h5py.Group, _attrs, absent={})

    @cached_property
    def config(self) -> dict:
        try:
            return tomllib.loads(self._config_text)
        except tomllib.TOMLDecodeError as e:
            raise AnalysisError(f"{self.path}: its config attribute is not TOML ({e}; a damaged run file?)") from None

    @cached_property
    def theory(self) -> dict:
        return self._read_attrs("theory")

    @cached_property
    def objective(self) -> dict:
        return self._read_attrs("objective")

    @cached_property
    def attrs(self) -> dict:
        return {k: v for k, v in self._read_attrs("/").items() if k != "config"}

    @cached_property
    def flat(self) -> dict:
        return flatten(self.config)

    def has_key(self, dotted: str) -> bool:
        return dotted in PSEUDO_KEYS or dotted in self.flat

    def key(self, dotted: str):
        """Value of a dotted config key, e.g. run.key('delay.max'); 'status' and 'file' too.
        An unknown key is an AnalysisError naming the key and the closest valid ones."""
        if dotted == "status":
            return self.status
        if dotted == "file":
            return os.path.basename(self.path)
        try:
            return self.flat[dotted]
        except KeyError:
            near = difflib.get_close_matches(dotted, list(self.flat) + list(PSEUDO_KEYS), n=3)
            hint = f"; did you mean {', '.join(near)}?" if near else "; `stale keys` lists the valid keys"
            raise AnalysisError(f"{self.path}: unknown key '{dotted}'{hint}") from None

    def series(self, name: str) -> np.ndarray:
        if name not in self.metrics:
            known = "" if name in METRIC_NAMES else f"; the run file's metrics are {', '.join(METRIC_NAMES)}"
            raise AnalysisError(f"{self.path}: no metric '{name}' (has: {', '.join(sorted(self.metrics))}){known}")
        return np.asarray(self.metrics[name], dtype=float)

    @property
    def lr(self) -> float:
        return number(self.path, self.theory.get("lr", self.flat.get("method.lr", math.nan)), "the step size")


# metadata reads an SWMR reader tries before it gives up on a damaged file, as the binary's
# (src/io/h5.cpp kSwmrReadAttempts): HDF5's default is 100 with a growing back-off, and a
# truncated .partial hung a report for minutes
SWMR_READ_ATTEMPTS = 4


@functools.cache
def _hdf5_library():
    """h5py's own libhdf5 through ctypes (h5py does not expose H5Pset_metadata_read_attempts),
    or None where it cannot be found: the open then keeps HDF5's default. Found once per process:
    a live .partial is opened again for every series read from it"""
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f
                            if re.search(r"/libhdf5[-.][^/]*$", line.split()[-1] if line.split() else "")})
    except OSError:
        return None
    for p in paths:
        try:
            lib = ctypes.CDLL(p)
            lib.H5Pset_metadata_read_attempts.argtypes = [ctypes.c_int64, ctypes.c_uint]
            return lib
        except (OSError, AttributeError):
            continue
    return None


def _open_swmr(path: str):
    lib = _hdf5_library()
    if lib is None:
        return h5py.File(path, "r", swmr=True)
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    lib.H5Pset_metadata_read_attempts(fapl.id, SWMR_READ_ATTEMPTS)
    fid = h5py.h5f.open(os.fsencode(path), h5py.h5f.ACC_RDONLY | h5py.h5f.ACC_SWMR_READ, fapl=fapl)
    return h5py.File(fid)


def open_h5(path: str, what: str = "HDF5 file"):
    """h5py.File(path, "r"), or an AnalysisError naming the path when it is missing or is not
    readable as `what`. A file a writer holds (a live or killed RUN.h5.partial, in SWMR mode:
    docs/design.md) is opened as an SWMR reader that retries a damaged read a few times only;
    any other failure (truncated, not HDF5) is the error at once."""
    if not os.path.exists(path):
        raise AnalysisError(f"{path}: no such file")
    try:
        return h5py.File(path, "r")
    except OSError as e:
        # the writer's SWMR flag, or its file lock before SWMR starts; not any "lock": a truncated
        # file's message names its "sblock", and an SWMR open reads a truncated file as one that lacks objects
        if "already open for write" not in str(e) and "unable to lock file" not in str(e):
            raise AnalysisError(f"{path}: not a readable {what} ({e})") from None
        try:
            return _open_swmr(path)
        except OSError:
            raise AnalysisError(f"{path}: not a readable {what} ({e})") from None


def load_run(path: str) -> Run:
    """A run file's status and config, and its /metrics read on first use: a series whose
    header says it is not a 1-D numeric series, a config that is not text, or an object h5py
    cannot open is an AnalysisError naming the file (no data is read here)."""
    with open_h5(path, "HDF5 run file") as f:
        try:
            if "config" not in f.attrs or "metrics" not in f:
                raise AnalysisError(f"{path}: not a stale run file (no /metrics or config attribute; a schedule file?)")
            status = _text(f.attrs.get("status", "unknown"))
            config = _text(f.attrs["config"])
            version = int(f.attrs.get("schema_version", -1))
            if version != RUN_SCHEMA_VERSION:
                raise AnalysisError(f"{path}: run file schema_version {version}; this version of stale reads "
                                    f"{RUN_SCHEMA_VERSION} (read it with the stale that wrote it: its root attribute 'version')")
            m = f["metrics"]
            if not isinstance(config, str) or not isinstance(m, h5py.Group):
                raise AnalysisError(f"{path}: not a stale run file (its config is not text or /metrics not a group)")
            # the writer's order (src/io/metrics_schema.cpp), then any series this copy does not know
            names = [k for k in METRIC_NAMES if k in m] + [k for k in m if k not in METRIC_NAMES]
            for name in names:
                d = m[name]
                if not isinstance(d, h5py.Dataset) or d.ndim != 1 or d.dtype.kind not in "fiub":
                    raise AnalysisError(f"{path}: /metrics/{name} is not a 1-D numeric series (a damaged run file?)")
            # a finished file's series have equal lengths (rows are written together); only a
            # .partial (running, interrupted or killed) may hold one a flush longer than another
            n = None if status in ("ok", "diverged") else min((m[name].shape[0] for name in names), default=0)
        except _DAMAGE as e:
            raise damaged(path, e) from None
        return Run(path, config, status, _Metrics(path, names, n))


class ScheduleFile(_Objects):
    """A schedule file (`stale schedule NAME … --out`, src/io/schedule_file.cpp): its root
    attributes (schedule, stages, microbatches, …) and /schedule, /delay_summary, /delays,
    /updates and /reads through has, dataset and group_attrs (read at each call)."""

    what = "schedule file"

    def __init__(self, path: str, attrs: dict):
        self.path, self.attrs = path, attrs


def open_schedule(path: str) -> ScheduleFile:
    """A schedule file's root attributes, its kind and schema version checked: a run file, a
    foreign file or another layout is an AnalysisError naming the file (no data is read here)."""
    with open_h5(path, "HDF5 schedule file") as f:
        try:
            attrs = _attrs(f)
        except _DAMAGE as e:
            raise damaged(path, e, "schedule file") from None
    if attrs.get("file_kind") != "stale schedule":
        raise AnalysisError(f"{path}: not a stale schedule file (no root attribute file_kind = 'stale schedule'; "
                            "a run file?)")
    version = attrs.get("schema_version")
    if not (isinstance(version, (int, np.integer)) and version == SCHEDULE_SCHEMA_VERSION):
        raise AnalysisError(f"{path}: schedule file schema_version {version}; this version of stale reads "
                            f"{SCHEDULE_SCHEMA_VERSION} (write it again with `stale schedule`)")
    return ScheduleFile(path, attrs)


def run_paths(paths) -> list[str]:
    """Run files, with each sweep folder among `paths` replaced by the run files its index.csv
    lists: the runs of this sweep, never an old file left in its runs/ by an earlier version of
    the sweep (a glob over runs/*.h5 mixes them in)."""
    out = []
    for p in map(os.fspath, paths):
        if not os.path.isdir(p):
            out.append(p)
            continue
        index = os.path.join(p, "index.csv")
        if not os.path.exists(index):
            raise AnalysisError(f"{p}: a folder but not a sweep folder (no index.csv); give run files (.h5) or "
                                "a folder that `stale sweep` wrote")
        with open(index, newline="") as f:
            rows = list(csv.DictReader(f))
        if rows and "path" not in rows[0]:
            raise AnalysisError(f"{index}: no 'path' column; not an index that `stale sweep` wrote")
        # a failed point has no file; grid points that are the same run share one (counted once)
        out += [os.path.join(p, r["path"]) for r in rows if r.get("path") and r.get("status") in ("ok", "diverged")]
    return list(dict.fromkeys(out))


def load_runs(paths) -> list[Run]:
    files = run_paths(paths)
    if not files:
        raise AnalysisError("no run files given" if not paths else f"no finished runs in {', '.join(map(str, paths))}")
    return [load_run(p) for p in files]


def x_series(run: Run, x: str) -> np.ndarray:
    """The x axis of a run: block updates k, or the simulated time of the updates (0 at k = 0,
    where no op has run yet). A run without a schedule has no time: AnalysisError."""
    v = run.series(x).copy()
    if x == "time":
        if len(v) and not np.isfinite(v[0]):
            v[0] = 0.0
        if not np.all(np.isfinite(v)):
            raise AnalysisError(f"{run.path}: no simulated time (a method without a schedule); use --x k")
    return v


def progress_series(run: Run) -> np.ndarray:
    """f − f_* where f_* is known, the loss otherwise."""
    sub = np.asarray(run.metrics.get("subopt", []), dtype=float)
    if len(sub) and np.isfinite(sub[0]):
        return sub
    return np.asarray(run.metrics.get("loss", sub), dtype=float)


def divergence_reason(run: Run, factor: float = DIVERGENCE_FACTOR) -> str | None:
    """Why the run counts as diverged, or None: its status is not ok, its last value is not
    finite, or f − f_* (the loss when f_* is unknown) ended above `factor` × its start."""
    if run.status != "ok":
        return f"status {run.status}"
    y = progress_series(run)
    if len(y) == 0:
        return None
    last = y[-1]
    if not math.isfinite(last):
        return "non-finite value"
    start = abs(y[0])
    if start > 0 and math.isfinite(start) and last > factor * start:
        return f"ended at {last:.3g} > {factor:g} × start {start:.3g}"
    return None


def is_diverged(run: Run, factor: float = DIVERGENCE_FACTOR) -> bool:
    return divergence_reason(run, factor) is not None
