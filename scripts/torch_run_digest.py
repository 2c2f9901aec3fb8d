#!/usr/bin/env python3
"""The digest of one fixed stale.torch run (an MLP of four 256-wide stages under PipeDream, 96
updates), with what computed it: run it on two machines, or under two kernel settings, and
compare. A torch run repeats bit for bit on one machine, but torch picks its CPU kernels by the
instruction set (README "Your own model", Reproducibility):

    python3 scripts/torch_run_digest.py                       # the kernels torch picks here
    ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 python3 scripts/torch_run_digest.py   # AVX2's
    python3 scripts/torch_run_digest.py --dtype float64

Prints one line: what computed the run as its /objective description records it (torch's version,
the dtype, the kernels' instruction set, MKL_CBWR where set), the thread count, the SHA-256 (first
16 hex digits) of the logged iterates and losses, the last loss.
"""
from __future__ import annotations

import argparse
import hashlib

import numpy as np
import torch

import stale
import stale.torch
from bench_torch_overhead import mlp  # the benchmark's model: Linear(W, W) + Tanh stages, then Linear(W, 10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    dtype = getattr(torch, a.dtype)
    width, batch, stages = 256, 128, 4
    g = np.random.default_rng(0)
    X = g.standard_normal((8 * batch, width))
    y = g.integers(0, 10, 8 * batch)
    model = stale.torch.TorchStages(mlp(width, stages, dtype), (X, y), torch.nn.functional.cross_entropy,
                                    batch_size=batch, dtype=dtype)
    r = stale.run({"method.name": "pipedream", "method.lr": 0.05, "method.updates": 96, "log.every": 8,
                   "log.iterates_every": 8}, model=model)
    digest = hashlib.sha256(r.iterates.tobytes() + r.series("loss").tobytes()).hexdigest()[:16]
    # what computed it, as the run file's /objective description records it (TorchStages._kernels)
    print(f"{model._kernels()}, {a.threads} thread(s): digest {digest}, last loss {float(r.series('loss')[-1])!r}")


if __name__ == "__main__":
    main()
