#!/usr/bin/env python3
"""The digest of one fixed stale.torch run, with what computed it: run it on two machines, or
under two kernel settings, and compare (README "Your own model", Reproducibility).

The model is four stages of Linear(512, 512), a centring of the whole activation (minus its mean
over all 2^18 values: a reduction that torch's CPU kernels split by the intra-op thread count)
and Tanh, then Linear(512, 10), under PipeDream for 32 updates. The run takes torch's intra-op
thread count from the model (TorchStages(threads=...)), not from the calling process, so the
digest is the same whatever the process's torch.set_num_threads says; --ambient runs it once per
given process setting to show that.

    python3 scripts/torch_run_digest.py                           # the kernels torch picks here
    python3 scripts/torch_run_digest.py --ambient 1,2,3           # one line per process setting
    ATEN_CPU_CAPABILITY=avx2 python3 scripts/torch_run_digest.py  # AVX2's kernels
    python3 scripts/torch_run_digest.py --dtype float64 --threads 2

Prints one line per --ambient value: what computed the run as its /objective description records
it (torch's version, the dtype, the kernels' instruction set, MKL_CBWR where set, the model's
intra-op threads), the process's setting around the run, the thread counts the stages saw, the
SHA-256 (first 16 hex digits) of the logged iterates and losses, and the last loss.
"""
from __future__ import annotations

import argparse
import hashlib

import numpy as np
import torch

import stale
import stale.torch


class Centred(torch.nn.Module):
    """x − mean(x) over the whole activation, and a note of torch's intra-op thread count at
    every call (a plain list: state outside w that never enters the arithmetic)"""

    def __init__(self):
        super().__init__()
        self.seen: list[int] = []

    def forward(self, x):
        self.seen.append(torch.get_num_threads())
        return x - x.mean()


WIDTH, BATCH, BATCHES, STAGES = 512, 512, 2, 4


def digest_model(dtype=torch.float32, threads: int = 1) -> stale.torch.TorchStages:
    """the digest's model and data (fixed seeds): the thread count of its run is `threads`"""
    torch.manual_seed(0)
    blocks = [torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), Centred(), torch.nn.Tanh()) for _ in range(STAGES - 1)]
    net = torch.nn.Sequential(*blocks, torch.nn.Linear(WIDTH, 10)).to(dtype)
    g = np.random.default_rng(0)
    X = g.standard_normal((BATCHES * BATCH, WIDTH))
    y = g.integers(0, 10, BATCHES * BATCH)
    return stale.torch.TorchStages(net, (X, y), torch.nn.functional.cross_entropy, batch_size=BATCH, dtype=dtype,
                                   threads=threads)


def digest_run(model: stale.torch.TorchStages):
    """(digest, last loss, the thread counts the stages saw during the run) of the fixed run"""
    for mod in model.modules:
        for sub in mod.modules():
            if isinstance(sub, Centred):
                sub.seen.clear()
    r = stale.run({"method.name": "pipedream", "method.lr": 0.05, "method.updates": 32, "log.every": 8,
                   "log.iterates_every": 8, "log.progress": False}, model=model)
    digest = hashlib.sha256(r.iterates.tobytes() + r.series("loss").tobytes()).hexdigest()[:16]
    seen = sorted({t for mod in model.modules for sub in mod.modules() if isinstance(sub, Centred) for t in sub.seen})
    return digest, float(r.series("loss")[-1]), seen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--threads", type=int, default=1, help="the model's intra-op threads (TorchStages(threads=))")
    ap.add_argument("--ambient", default="",
                    help="comma-separated torch.set_num_threads values of the calling process, one run each "
                         "(default: the process's own)")
    a = ap.parse_args()
    model = digest_model(getattr(torch, a.dtype), a.threads)
    for t in [int(v) for v in a.ambient.split(",") if v] or [torch.get_num_threads()]:
        torch.set_num_threads(t)
        digest, last, seen = digest_run(model)
        after = torch.get_num_threads()
        # what computed it, as the run file's /objective description records it (TorchStages._kernels)
        print(f"{model._kernels()}; process {t} thread(s), stages saw {seen}, process {after} after: digest {digest}, "
              f"last loss {last!r}")


if __name__ == "__main__":
    main()
