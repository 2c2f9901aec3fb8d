"""Selecting and grouping runs by config keys: `--where key=value` filters, `--group-by k1,k2`
groups, numeric sorting of numeric values, and the keys that make a group inhomogeneous."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .errors import AnalysisError, warn
from .runs import Run

# Keys that never make runs different experiments: replicates differ in `seed`; the others
# only say where the file went and whether progress was printed.
REPLICATE_KEYS = ("seed", "log.out", "log.progress")


def parse_keys(text: str | None) -> list[str]:
    """'method.name, delay.max' -> ['method.name', 'delay.max']"""
    if not text:
        return []
    keys = [k.strip() for k in text.split(",")]
    if any(not k for k in keys):
        raise AnalysisError(f"--group-by '{text}': empty key (give comma-separated config keys, e.g. method.name,delay.max)")
    return keys


def parse_where(items: list[str] | None) -> list[tuple[str, str]]:
    out = []
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise AnalysisError(f"--where '{item}': expected key=value, e.g. --where method.name=rpd")
        out.append((key.strip(), value.strip()))
    return out


def fmt_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return "[" + ", ".join(fmt_value(x) for x in v) + "]"
    return str(v)


def _number(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(str(v))
    except ValueError:
        return None


def matches(value, wanted: str) -> bool:
    """Config value against a --where value: numerically when both are numbers (so
    method.lr=0.015625 matches 2^-6 written as 1.5625e-2), as text otherwise."""
    a, b = _number(value), _number(wanted)
    if a is not None and b is not None:
        return a == b or math.isclose(a, b, rel_tol=1e-12)
    return fmt_value(value).lower() == wanted.lower()


def filter_runs(runs: list[Run], where: list[tuple[str, str]]) -> list[Run]:
    for key, _ in where:
        if runs and not any(r.has_key(key) for r in runs):
            runs[0].key(key)  # raises the one-line unknown-key error
    kept = [r for r in runs if all(r.has_key(k) and matches(r.key(k), v) for k, v in where)]
    if runs and not kept:
        cond = " and ".join(f"{k}={v}" for k, v in where)
        raise AnalysisError(f"no run matches --where {cond} (of {len(runs)} runs)")
    return kept


def sort_key(value):
    """Numbers before text and in numeric order (2 < 10, 0.0039 < 0.0156); tuples element-wise."""
    if isinstance(value, tuple):
        return tuple(sort_key(v) for v in value)
    n = _number(value)
    return (0, n, "") if n is not None and not math.isnan(n) else (1, 0.0, str(value))


@dataclass
class Group:
    keys: list[str]
    values: tuple
    runs: list[Run]
    mixed: dict[str, list] = field(default_factory=dict)   # keys whose values differ inside the group
    distinct: dict[str, object] = field(default_factory=dict)  # constant inside, different across groups

    @property
    def name(self) -> str:
        if not self.keys:
            return self.values[0]
        return ", ".join(f"{k}={fmt_value(v)}" for k, v in zip(self.keys, self.values))

    def label(self, names: dict[str, str] | None = None) -> str:
        """Legend text: the group values, the keys that also tell this group apart, and the
        keys it mixes."""
        names = names or {}
        if self.keys:
            parts = [f"{names.get(k, k)}={fmt_value(v)}" for k, v in zip(self.keys, self.values)]
        else:
            parts = [str(self.values[0])]
        parts += [f"{names.get(k, k)}={fmt_value(v)}" for k, v in self.distinct.items()]
        text = ", ".join(parts)
        if self.mixed:
            text += " [mixed " + ", ".join(self.mixed) + "]"
        return text


def _differing(runs: list[Run], skip: set[str]) -> dict[str, list]:
    keys = set()
    for r in runs:
        keys.update(r.flat)
    out = {}
    for k in sorted(keys - skip):
        vals = {fmt_value(r.flat.get(k, "(absent)")) for r in runs}
        if len(vals) > 1:
            out[k] = sorted(vals, key=sort_key)
    return out


def group_runs(runs: list[Run], keys: list[str], warn_mixed: bool = True) -> list[Group]:
    """Runs grouped by the values of `keys` (one group per file when keys is empty), sorted
    numerically. Each group records the keys that differ inside it (other than the seed) and
    the keys that are constant inside it but differ between groups; a warning goes to stderr
    for every mixed group."""
    for k in keys:
        if runs and not any(r.has_key(k) for r in runs):
            runs[0].key(k)  # raises the one-line unknown-key error
    by: dict[tuple, list[Run]] = {}
    for r in runs:
        gid = tuple(r.key(k) for k in keys) if keys else (r.path,)
        gid = tuple(tuple(v) if isinstance(v, list) else v for v in gid)
        by.setdefault(gid, []).append(r)
    skip = set(keys) | set(REPLICATE_KEYS)
    groups = [Group(keys, gid, rs) for gid, rs in sorted(by.items(), key=lambda kv: sort_key(kv[0]))]
    for g in groups:
        g.mixed = _differing(g.runs, skip) if keys else {}
        if g.mixed and warn_mixed:
            what = "; ".join(f"{k} ({', '.join(v)})" for k, v in g.mixed.items())
            warn(f"group {g.name} merges runs that also differ in {what}: add the key to --group-by or select with --where")
    if keys and len(groups) > 1:
        across = _differing([r for g in groups for r in g.runs], skip)
        for k in across:
            if all(k not in g.mixed for g in groups):
                for g in groups:
                    g.distinct[k] = g.runs[0].flat.get(k, "(absent)")
    return groups
