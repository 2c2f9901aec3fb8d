"""The analysis side of issue 34's fuzzers: what `stale report` and the scripts read from a sweep
(index rows, run files: status, config, /theory, /objective, every /metrics series, the bound
and the mean curves) fed mutations of a real sweep's run file, made by the binary. Each input
must end in success or in what the scripts' run_cli turns into one line and exit code 2
(AnalysisError, OSError); anything else would be a traceback. The C++ readers' fuzzers are
tests/fuzz/test_fuzz_data_files.cpp.

Mutations (seeded, 300 inputs): bit flips, boundary bytes, 8-byte fields set to huge values at
the places the file stores its shapes, truncations, inserted and deleted runs; and seeds
damaged through h5py in ways a flip of checksummed metadata cannot reach (a config that is not
TOML, a series that is a scalar, text or 2-D, /metrics that is a dataset, a missing series).
"""
from __future__ import annotations

import os
import random
import shutil
import struct

import h5py
import numpy as np

from stale_analysis.bound import bound_runs
from stale_analysis.errors import AnalysisError
from stale_analysis.runs import divergence_reason, load_run, progress_series
from stale_analysis.sweeps import mean_curve, read_index

ALLOWED = (AnalysisError, OSError)  # what run_cli prints as one line, exit 2
INPUTS = int(os.environ.get("STALE_FUZZ_ITERATIONS", "300"))


def read_everything(sweep_dir: str, path: str):
    """what the report and the scripts read of a sweep and of one of its run files"""
    rows = read_index(sweep_dir)
    bound_runs([sweep_dir])
    done = [r for r in rows if r["status"] in ("ok", "diverged")]
    mean_curve(sweep_dir, done, "k", "subopt")
    run = load_run(path)
    _ = run.config, run.flat, run.theory, run.objective, run.attrs, run.lr
    divergence_reason(run)
    progress_series(run)
    for name in run.metrics:
        run.series(name)


def damaged_seeds(path: str, folder: str) -> list[bytes]:
    """copies of the run file damaged through h5py: what a bit flip in checksummed metadata
    cannot reach, but a foreign or half-written file can hold"""
    edits = {
        "config_not_toml": lambda f: f.attrs.__setitem__("config", "[objective\nname = = 1"),
        "config_not_text": lambda f: f.attrs.__setitem__("config", np.arange(3)),
        "scalar_series": lambda f: (f["metrics"].__delitem__("k"), f["metrics"].create_dataset("k", data=3.0)),
        "text_series": lambda f: (f["metrics"].__delitem__("subopt"), f["metrics"].create_dataset("subopt", data="x")),
        "matrix_series": lambda f: (f["metrics"].__delitem__("loss"),
                                    f["metrics"].create_dataset("loss", data=np.ones((3, 2)))),
        "missing_series": lambda f: f["metrics"].__delitem__("grad_norm_sq_mean"),
        "metrics_dataset": lambda f: (f.__delitem__("metrics"), f.create_dataset("metrics", data=np.arange(4.0))),
        "status_number": lambda f: f.attrs.__setitem__("status", 7),
        "theory_text_delta": lambda f: f["theory"].attrs.__setitem__("delta", "many"),
    }
    out = []
    for name, edit in edits.items():
        for status in ("ok", "interrupted"):  # a .partial's series are read to their common length
            p = os.path.join(folder, f"{name}-{status}.h5")
            shutil.copyfile(path, p)
            with h5py.File(p, "r+") as f:
                f.attrs["status"] = status
                edit(f)
            with open(p, "rb") as fh:
                out.append(fh.read())
    return out


def shape_fields(raw: bytes, path: str) -> list[int]:
    """offsets where the file stores one of its datasets' lengths as 8 bytes, little-endian"""
    sizes = set()
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: sizes.update(o.shape) if isinstance(o, h5py.Dataset) else None)
    out = []
    for v in sizes:
        if v < 2:
            continue
        pat = struct.pack("<Q", v)
        at = raw.find(pat)
        while at >= 0:
            out.append(at)
            at = raw.find(pat, at + 1)
    return out


def mutate(rng: random.Random, raw: bytes, fields: list[int]) -> bytes:
    b = bytearray(raw)
    for _ in range(rng.choice([1, 1, 2, 3])):
        op = rng.randrange(7)
        pos = rng.randrange(len(b) + 1)
        if op == 0 and fields:
            at = rng.choice(fields)
            if at + 8 <= len(b):
                b[at:at + 8] = struct.pack("<Q", rng.choice([0, 2 ** 31 - 1, 2 ** 32, 2 ** 40, 2 ** 62, 2 ** 64 - 1]))
        elif op == 1 and b:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        elif op == 2 and b:
            b[rng.randrange(len(b))] = rng.choice([0, 1, 0x7F, 0x80, 0xFF])
        elif op == 3:
            del b[rng.randrange(len(b) + 1):]
        elif op == 4:
            b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 17)))
        elif op == 5:
            del b[pos:pos + rng.randrange(1, 33)]
        elif len(b) >= 8:
            at = rng.randrange(len(b) - 7)
            b[at:at + 8] = struct.pack("<Q", rng.choice([2 ** 32, 2 ** 63, 2 ** 64 - 1]))
    return bytes(b)


def test_mutated_run_files_end_in_one_line_errors(binary_sweep, tmp_path):
    sweep = tmp_path / "sweep"
    shutil.copytree(binary_sweep / "out", sweep)
    rows = read_index(str(sweep))
    target = os.path.join(str(sweep), next(r["path"] for r in rows if r["status"] == "ok"))
    original = open(target, "rb").read()
    read_everything(str(sweep), target)  # the seed itself reads
    seeds = [original] + damaged_seeds(target, str(tmp_path))
    fields = [shape_fields(original, target)] + [[] for _ in seeds[1:]]
    rng = random.Random(12)
    failures = []
    tally = {"accepted": 0, "rejected": 0}
    for i in range(INPUTS):
        if i < len(seeds):  # each seed as it is first
            data = seeds[i]
        else:
            s = rng.randrange(len(seeds))
            data = mutate(rng, seeds[s], fields[s])
        with open(target, "wb") as f:
            f.write(data)
        try:
            read_everything(str(sweep), target)
            tally["accepted"] += 1
        except ALLOWED:
            tally["rejected"] += 1
        except Exception as e:  # noqa: BLE001 — anything else is a traceback in the scripts
            keep = tmp_path.parent / f"stale-fuzz-run-file-{i}.h5"
            keep.write_bytes(data)
            failures.append(f"input {i}: {type(e).__name__}: {e} (saved at {keep})")
    with open(target, "wb") as f:
        f.write(original)
    print(f"run files for the analysis scripts: {INPUTS} inputs, {tally}")
    assert not failures, "\n".join(failures[:20])
