"""Reading stale run files (HDF5) with h5py: metrics, the resolved config, theory constants.

Shared by the plotting and analysis scripts so the file layout is read in one place.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field

import h5py
import numpy as np


@dataclass
class Run:
    path: str
    config: dict
    status: str
    metrics: dict[str, np.ndarray]
    theory: dict[str, float] = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)

    def key(self, dotted: str):
        """Value of a dotted config key, e.g. run.key('delay.max')."""
        node = self.config
        for part in dotted.split("."):
            node = node[part]
        return node


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


def load_run(path: str) -> Run:
    with h5py.File(path, "r") as f:
        config = tomllib.loads(_text(f.attrs["config"]))
        metrics = {name: f["metrics"][name][()] for name in f["metrics"]}
        theory = {k: _text(v) for k, v in f["theory"].attrs.items()} if "theory" in f else {}
        attrs = {k: _text(v) for k, v in f.attrs.items() if k != "config"}
        return Run(path, config, _text(f.attrs["status"]), metrics, theory, attrs)
