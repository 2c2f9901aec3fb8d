"""A seeded fuzzer over the Python front end's arguments (issue 54): every call of stale.schedule,
stale.run, stale.sweep and stale.stability with one argument replaced by a hostile value (a
fraction where a count goes, NaN, infinities, 2**40, bytes, complex numbers, numpy scalars,
nested lists, None, booleans) either works or raises stale.ConfigError with one line. Any other
exception (a TypeError with nanobind's multi-line signature dump, a ValueError from float(), an
OverflowError) fails, and so does a multi-line message. A bytes `out=` of stale.sweep reached the
C++ side as such a dump before this issue's fix (the positive control in the commit message).

STALE_FUZZ_ITERATIONS sets the number of calls (default 160); STALE_FUZZ_SEED the seed."""
from __future__ import annotations

import os
import random

import numpy as np
import pytest

import stale

EXP = os.path.join(os.path.dirname(__file__), "..", "..", "experiments")
QUICK = os.path.join(EXP, "quickstart.toml")

HOSTILE = [0, -1, 1, 2.5, 2.0, float("nan"), float("inf"), -float("inf"), 2 ** 40, -2 ** 63, 10 ** 30, b"x", "x", "",
           "2", 1j, 1 + 0j, np.float64(3.0), np.float32(0.5), np.int64(3), np.int8(-3), np.complex128(1j),
           np.str_("a"), [1, 2], [[1]], (), {}, None, True, False, np.array([1.0, 2.0]), np.bool_(True)]


def calls(tmp):
    """(name, function of one hostile value) for every argument a front-end call takes"""
    spec = tmp / "s.toml"
    spec.write_text(f'base = "{QUICK}"\n[set]\n"method.updates" = 20\n[grid]\nseed = [0]\n')
    sched = dict(name="pipedream", stages=3, microbatches=4)
    out = []
    for arg in ("stages", "microbatches", "accumulation", "replicas", "local_steps", "chunks", "steady_margin",
                "trace", "out", "delay_table", "forward", "backward", "jitter", "seed"):
        out.append((f"schedule {arg}", lambda v, a=arg: stale.schedule(**{**sched, a: v,
                                                                          **({"out": tmp / "s.h5"} if a == "out" and
                                                                             isinstance(v, str) and v else {})})))
    for key in ("method.lr", "method.updates", "method.stages", "delay.max", "seed", "log.every"):
        out.append((f"run {key}", lambda v, k=key: stale.run(QUICK, **{"method.updates": 30, k: v})))
    for arg in ("force", "progress", "drop_unread", "resume", "config"):
        out.append((f"run {arg}", lambda v, a=arg: stale.run(**({"config": QUICK} if a != "config" else {}), **{a: v},
                                                              method__updates=20)))
    out.append(("run out", lambda v: stale.run(QUICK, out=v if not isinstance(v, str) or not v else tmp / "r.h5",
                                               method__updates=20)))
    for arg in ("jobs", "ensemble", "shard", "out", "progress"):
        out.append((f"sweep {arg}", lambda v, a=arg: stale.sweep(spec, **{"out": tmp / "sw", a: v}
                                                                  if a != "out" else {"out": v if not isinstance(v, str)
                                                                                      or not v else tmp / "sw2"})))
    for arg in ("lr", "order", "solver", "dense_max", "rel_tol", "gamma_max"):
        out.append((f"stability {arg}", lambda v, a=arg: stale.stability(QUICK, **{"delay.name": "constant",
                                                                                     "gamma_max": False, a: v})))
    return out


def test_hostile_python_arguments_work_or_are_one_line_config_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative path argument ("x", "2") writes here, not into the checkout
    rng = random.Random(int(os.environ.get("STALE_FUZZ_SEED", "54")))
    n = int(os.environ.get("STALE_FUZZ_ITERATIONS", "160"))
    targets = calls(tmp_path)
    failures, errors = [], 0
    for i in range(n):
        name, call = targets[i % len(targets)] if i < len(targets) else rng.choice(targets)
        value = rng.choice(HOSTILE)
        try:
            call(value)
        except stale.ConfigError as e:
            errors += 1
            if "\n" in str(e).strip():
                failures.append(f"{name} = {value!r}: a multi-line ConfigError: {str(e)[:200]!r}")
        except Exception as e:  # noqa: BLE001: any other type is the finding
            failures.append(f"{name} = {value!r}: {type(e).__name__}: {str(e)[:200]!r}")
    assert not failures, "\n".join(failures)
    assert errors > n // 4, f"only {errors} of {n} hostile calls were refused: the fuzzer is not reaching the checks"
