"""Configs from Python: a TOML path, or a dict, plus keyword overrides, turned into what the
C++ side takes (a file path or TOML text, and "key=value" assignments with TOML values)."""
from __future__ import annotations

import json
import math
import os

from stale_analysis.runs import flatten  # nested sections → dotted keys, as the run files' readers do


def toml_value(v, key: str = "") -> str:
    """A Python value as TOML text (what `stale run ... key=value` parses); another type (bytes,
    complex, a dict inside a list) is a one-line ConfigError naming the key"""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        v = float(v)  # numpy's float64 is a float whose repr is "np.float64(5.0)", not TOML
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, (str, os.PathLike)):
        return json.dumps(os.fspath(v))  # a TOML basic string
    if hasattr(v, "item") and not hasattr(v, "__len__"):  # numpy scalars
        return toml_value(v.item(), key)
    if isinstance(v, (list, tuple)) or hasattr(v, "tolist"):
        items = v.tolist() if hasattr(v, "tolist") else v
        return "[" + ", ".join(toml_value(x, key) for x in items) + "]"
    from ._stale import ConfigError
    raise ConfigError(f"config: {key or 'a value'} = {v!r} is of type {type(v).__name__}; use a number, bool, string or list")


def key_of(name: str) -> str:
    """A keyword argument's config key: "__" stands for the dot (method__lr → method.lr)."""
    return name.replace("__", ".")


def _flat_once(node: dict, prefix: str = "", out: dict | None = None) -> dict:
    """nested sections → dotted keys, refusing a key given twice in two spellings ({"method.lr":
    0.1, "method": {"lr": 0.2}}: it resolved by the dict's order before)"""
    out = {} if out is None else out
    for k, v in node.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            _flat_once(v, name + ".", out)
        elif name in out:
            from ._stale import ConfigError
            raise ConfigError(f"config: {name} is given twice in one dict ({out[name]!r} and {v!r}, as a dotted key and "
                              "inside its section); give it once")
        else:
            out[name] = v
    return out


def assignments(values: dict) -> list[str]:
    """"key=value" for each key; "~key" (unset: the key's default) for a value of None"""
    return [f"~{k}" if v is None else f"{k}={toml_value(v, k)}" for k, v in _flat_once(values).items()]


def resolve(config, overrides: dict) -> tuple[str, str, list[str]]:
    """(path, text, overrides) for the C++ side. `config`: a TOML path, a dict, or None (the
    defaults)."""
    extra = assignments({key_of(k): v for k, v in overrides.items()})
    if config is None:
        return "", "", extra
    if isinstance(config, dict):
        return "", "", assignments(config) + extra
    if isinstance(config, (str, os.PathLike)):
        return os.fspath(config), "", extra
    from ._stale import ConfigError
    raise ConfigError(f"config = {config!r:.60}: give a TOML path (str or os.PathLike) or a dict, not {type(config).__name__}")


def sweep_toml(spec: dict, base_dir: str) -> str:
    """A sweep dict ({"base": path or dict, "set": {...}, "grid": {...}, "zip": {...}, ...}) as
    the TOML text of a sweep file; a relative base path is taken from the current directory."""
    lines, tables = [], []
    for k, v in spec.items():
        if k == "base":
            if isinstance(v, dict):
                base = os.path.join(base_dir, "base.toml")
                with open(base, "w") as f:
                    f.write("\n".join(f'"{key}" = {toml_value(val)}' for key, val in flatten(v).items()) + "\n")
                v = base
            lines.append(f"base = {toml_value(os.path.abspath(os.fspath(v)))}")
        elif isinstance(v, dict):
            tables.append(f"[{k}]")
            tables += [f'"{key}" = {toml_value(val)}' for key, val in flatten(v).items()]
        else:
            lines.append(f"{k} = {toml_value(v)}")
    return "\n".join(lines + tables) + "\n"
