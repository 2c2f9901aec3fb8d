#!/usr/bin/env python3
"""What the harness costs a PyTorch model: one process times a stale run of a small MLP
(stale.torch.TorchStages under a schedule method) beside a plain PyTorch loop that does the same
forward and backward work (the same micro-batches in the same order, the same optimizer steps,
and the same full-data value-and-gradient passes the run's metrics make at k = 0 and k = K), and
prints both with their ratio. A third loop, also plain PyTorch, does that work stage by stage as the
harness must (each stage's output detached, one autograd call per stage and one for the loss,
each stage stepping its own parameters): harness / stage-wise is what the harness itself costs,
stage-wise / plain what splitting a model into stages costs in PyTorch whoever drives it. For a
float32 model a fourth loop steps float64 master weights in plain PyTorch (the harness's iterates
are float64): harness / master is the harness's cost beyond that choice. On the CPU, where the
adapter writes parameter gradients straight into the harness's storage and a float64 model's
stages view their weights there, the harness run is also timed with copies both ways instead
(in place / copied).
results/PERFORMANCE.md ("PyTorch stages") holds the numbers.

    python3 scripts/bench_torch_overhead.py                       # float32, width 512, batch 256
    python3 scripts/bench_torch_overhead.py --dtype float64 --width 256
    python3 scripts/bench_torch_overhead.py --width 1024 --batch 64 --parts   # and one stage op's pieces
    python3 scripts/bench_torch_overhead.py --device cuda --width 4096 --batch 4096 --threads 16

The ratio is the price of the stage-wise view (one autograd graph per stage, activations and
weights crossing into the harness's float64 storage, the driver's shape checks); it shrinks as a
stage's op grows. Median of --repeats alternating rounds.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

import stale
import stale.torch


def mlp(width: int, stages: int, dtype) -> torch.nn.Sequential:
    torch.manual_seed(0)
    blocks = [torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh()) for _ in range(stages - 1)]
    return torch.nn.Sequential(*blocks, torch.nn.Linear(width, 10)).to(dtype)


def sync(device: str):
    """device work is asynchronous: a clock read after it must wait for it"""
    if device == "cuda":
        torch.cuda.synchronize()


def timed(full_pass, step, order, full_passes, device):
    """the seconds of a run's work: a full pass (k = 0), a step per micro-batch in `order`, the
    remaining full passes, the device's queue drained"""
    t0 = time.perf_counter()
    full_pass()
    for m in order:
        step(m)
    for _ in range(full_passes - 1):
        full_pass()
    sync(device)
    return time.perf_counter() - t0


def plain_loop(net, X, y, offsets, order, lr, full_passes, device="cpu", master=False):
    """SGD on the same micro-batches: forward, backward, step; and the metrics' full passes.
    master=True steps float64 master weights as the harness does (its iterates are float64
    whatever the model's dtype): per step the gradients cast up, the float64 step, and the
    weights copied back into the model (for a float64 model, the plain loop itself)"""
    params = list(net.parameters())
    masters = [p.detach().to(torch.float64, copy=True) for p in params] if master else None
    loss_fn = torch.nn.functional.cross_entropy
    M = len(offsets) - 1

    def full_pass():
        for p in params:
            p.grad = None
        for m in range(M):
            sl = slice(offsets[m], offsets[m + 1])
            (loss_fn(net(X[sl]), y[sl]) / M).backward()

    def step(m):
        sl = slice(offsets[m], offsets[m + 1])
        for p in params:
            p.grad = None
        loss_fn(net(X[sl]), y[sl]).backward()
        with torch.no_grad():
            if masters is None:
                for p in params:
                    p -= lr * p.grad
            else:
                for p, w in zip(params, masters):
                    w -= lr * p.grad.to(torch.float64)
                    p.copy_(w)

    return timed(full_pass, step, order, full_passes, device)


def stagewise_loop(net, X, y, offsets, order, lr, full_passes, device="cpu"):
    """the plain loop's work split as the harness splits it, with no harness: per stage a detached
    input, a forward, and in reverse one torch.autograd.grad call for its parameters and input"""
    stages = list(net)
    params = [list(s.parameters()) for s in stages]
    loss_fn = torch.nn.functional.cross_entropy
    M = len(offsets) - 1

    def gradients(m, scale=1.0):
        sl = slice(offsets[m], offsets[m + 1])
        a, saved = X[sl], []
        for s, stage in enumerate(stages):
            x = a.detach().requires_grad_(s > 0)  # stage 0's input needs no gradient
            out = stage(x)
            saved.append((x, out))
            a = out.detach()
        last = a.requires_grad_(True)
        (g,) = torch.autograd.grad(loss_fn(last, y[sl]) * scale, [last])
        grads = [None] * len(stages)
        for s in reversed(range(len(stages))):
            x, out = saved[s]
            inputs = params[s] + [x] if x.requires_grad else params[s]
            got = torch.autograd.grad(out, inputs, g)
            grads[s] = got[:len(params[s])]
            if x.requires_grad:
                g = got[-1]
        return grads

    def full_pass():
        total = [[torch.zeros_like(p) for p in ps] for ps in params]
        for m in range(M):
            for t, gs in zip(total, gradients(m, 1.0 / M)):
                for a, b in zip(t, gs):
                    a += b
        return total

    def step(m):
        grads = gradients(m)
        with torch.no_grad():
            for ps, gs in zip(params, grads):
                for p, g in zip(ps, gs):
                    p -= lr * g

    return timed(full_pass, step, order, full_passes, device)


def per_call_ms(fn, device, calls=10):
    """milliseconds per call of fn, after one call that pays for torch's set-up"""
    fn()
    sync(device)
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    sync(device)
    return (time.perf_counter() - t0) / calls * 1e3


def stage_op_parts(model, w, x, grad_out, device):
    """where one stage op's time goes (stage 1, through the adapter and without it): the same
    forward + backward in plain PyTorch (the stage's own module, no weight loads), one load of
    w_s into the stage's parameters (a float64 -> model dtype copy; the adapter makes one per
    forward and one per backward), the gather of the parameter gradients into one vector, and
    one float64 pass over a block of w_s's size (a copy: the unit of the executor's passes, e.g.
    the block read into Z, g = x + 0, each pass of the step)"""
    s, mod = 1, model.modules[1]
    params = model._params[s]
    g = model._gradient(grad_out)

    def plain():
        xx = x.detach().requires_grad_(True)
        out = mod(xx)
        torch.autograd.grad(out, params + [xx], g.reshape(out.shape))

    _, (x_t, out, _) = model.forward(s, 0, x, w[s])
    grads = torch.autograd.grad(out, params, g.reshape(out.shape))
    src, dst = np.asarray(w[s]), np.empty_like(np.asarray(w[s]))
    return {
        "plain forward + backward of the stage": per_call_ms(plain, device),
        "one load of w_s (float64 -> model dtype)": per_call_ms(lambda: model._load(s, w[s]), device),
        "gather of the parameter gradients": per_call_ms(lambda: model._gather(s, grads), device),
        "one float64 pass over the block (copy)": per_call_ms(lambda: np.copyto(dst, src), "cpu"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--batches", type=int, default=8, help="mini-batches M of the data")
    ap.add_argument("--stages", type=int, default=4)
    ap.add_argument("--microbatches", type=int, default=48, help="micro-batches the run trains on")
    ap.add_argument("--method", default="1f1b-flush")
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--threads", type=int, default=1, help="torch's intra-op threads (both sides: the plain loops' torch.set_num_threads, the model's threads=)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="where the model's tensors live (the harness's own state stays on the host)")
    ap.add_argument("--parts", action="store_true",
                    help="also time the parts of one stage op (plain forward + backward, a weight load, the "
                         "gradient gather, a float64 pass over the block)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    dtype = getattr(torch, a.dtype)
    g = np.random.default_rng(0)
    n = a.batch * a.batches
    X = torch.as_tensor(g.standard_normal((n, a.width)), dtype=dtype, device=a.device)
    y = torch.as_tensor(g.integers(0, 10, n), device=a.device)
    S, lr = a.stages, 0.01
    K = a.microbatches * S  # 1F1B with a flush steps every stage once per mini-batch of S micro-batches
    cfg = {"method.name": a.method, "method.lr": lr, "method.updates": K, "method.microbatches": a.microbatches,
           "method.batch_order": "cyclic", "log.every": K, "log.iterates_every": 0, "log.delays": False,
           "log.progress": False}
    if a.method in ("1f1b-flush", "gpipe"):
        cfg["method.accumulation"] = 1  # a step per micro-batch, as the plain loop
    offsets = stale.batch_offsets(n, a.batch)
    order = [i % a.batches for i in range(a.microbatches)]

    # one stage op, alone: forward + backward of stage 1 through the adapter
    model = stale.torch.TorchStages(mlp(a.width, S, dtype), (X, y), torch.nn.functional.cross_entropy, batch_size=a.batch,
                                    dtype=dtype, device=a.device, threads=a.threads)
    w = model.initial_params(0)
    x = torch.tanh(torch.randn(a.batch, a.width, dtype=dtype, device=a.device))  # an activation the adapter holds
    grad_out = np.ones((a.batch, a.width), dtype=np.float32 if dtype == torch.float32 else np.float64)

    def stage_op():
        out, cache = model.forward(1, 0, x, w[1])
        model.backward(1, 0, grad_out, w[1], cache)

    op_ms = per_call_ms(stage_op, a.device)
    parts = stage_op_parts(model, w, x, grad_out, a.device) if a.parts else None

    harness, plain, stagewise, master, copied = [], [], [], [], []

    def harness_run(in_place=True):
        """seconds of a run, the run, and whether its model works in the harness's storage: on
        the CPU each backward writes its parameter gradient there, and a float64 model's stages
        view their weights there at pinned forwards (in_place=False: copies both ways instead)"""
        model = stale.torch.TorchStages(mlp(a.width, S, dtype), (X, y), torch.nn.functional.cross_entropy,
                                        batch_size=a.batch, dtype=dtype, device=a.device, threads=a.threads)
        if not in_place:
            model._pinned_views = model._writes_gradients = False
        t0 = time.perf_counter()
        r = stale.run(cfg, model=model)
        assert r.status == "ok" and r.summary["k"] == K, (r.status, r.summary["k"])
        return time.perf_counter() - t0, r, model._pinned_views or model._writes_gradients

    for _ in range(a.repeats):
        t, r, in_place = harness_run()
        harness.append(t)
        if in_place:  # and with copies, as a GPU model runs
            t, r_copied, _ = harness_run(in_place=False)
            copied.append(t)
            assert np.array_equal(r.iterates, r_copied.iterates), "in place and copied give the same run"
        plain.append(plain_loop(mlp(a.width, S, dtype).to(a.device), X, y, offsets, order, lr, full_passes=2,
                                device=a.device))
        stagewise.append(stagewise_loop(mlp(a.width, S, dtype).to(a.device), X, y, offsets, order, lr, full_passes=2,
                                        device=a.device))
        if dtype != torch.float64:
            master.append(plain_loop(mlp(a.width, S, dtype).to(a.device), X, y, offsets, order, lr, full_passes=2,
                                     device=a.device, master=True))
    h, p, sw = statistics.median(harness), statistics.median(plain), statistics.median(stagewise)
    where = torch.cuda.get_device_name() if a.device == "cuda" else "cpu"
    print(f"torch {torch.__version__}, {a.dtype}, {a.threads} thread(s), {where}; S={S} stages of Linear({a.width},{a.width})+Tanh, "
          f"batch {a.batch}, M={a.batches}, {a.microbatches} micro-batches under {a.method}, 2 full passes (metrics)")
    print(f"one stage op (forward + backward of stage 1 through stale.torch): {op_ms:.2f} ms")
    if parts:
        d = sum(p.numel() for p in model._params[1])
        print(f"  its parts (stage 1: {d} parameters):")
        for what, ms in parts.items():
            print(f"    {what}: {ms:.3f} ms")
        plain_ms, load_ms = parts["plain forward + backward of the stage"], parts["one load of w_s (float64 -> model dtype)"]
        print(f"  a driver whose only extra work were the op's weight loads (one, or one per pass): "
              f"{(plain_ms + load_ms) / plain_ms:.2f}x to {(plain_ms + 2 * load_ms) / plain_ms:.2f}x the plain stage op")
    print(f"harness run (stale.run):  {h:.3f} s   (repeats: {', '.join(f'{t:.3f}' for t in harness)})")
    print(f"plain PyTorch loop:       {p:.3f} s   (repeats: {', '.join(f'{t:.3f}' for t in plain)})")
    print(f"stage-wise PyTorch loop:  {sw:.3f} s   (repeats: {', '.join(f'{t:.3f}' for t in stagewise)})")
    if master:
        fm = statistics.median(master)
        print(f"plain loop, float64 master weights: {fm:.3f} s   (repeats: {', '.join(f'{t:.3f}' for t in master)})")
    if copied:
        fc = statistics.median(copied)
        print(f"harness run, weights and gradients copied instead of in place: {fc:.3f} s   "
              f"(repeats: {', '.join(f'{t:.3f}' for t in copied)});  in place / copied: {h / fc:.3f}")
    print(f"ratio harness / plain:    {h / p:.3f}")
    print(f"ratio harness / stage-wise (the harness's own cost): {h / sw:.3f};  stage-wise / plain (the split's): {sw / p:.3f}")
    if master:
        print(f"ratio harness / plain with float64 master weights: {h / fm:.3f};  master / plain (float64 iterates' "
              f"cost in plain PyTorch): {fm / p:.3f}")


if __name__ == "__main__":
    main()
