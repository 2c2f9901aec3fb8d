"""stale.torch: PyTorch modules as the stages of a stale.StageModel (pip install 'stale[torch]').

    import torch, stale, stale.torch
    net = torch.nn.Sequential(block0, block1, block2, block3)        # one child per stage
    model = stale.torch.TorchStages(net, (X, y), torch.nn.functional.cross_entropy, batch_size=32)
    stale.run({"method.name": "pipedream", "method.lr": 0.05}, model=model)

Stage s is the s-th child of an nn.Sequential (or the s-th module of a list); its parameters, in
named_parameters() order, are block s of the harness's w, and autograd gives the backward pass.
The data (X, y) are split into the harness's fixed batches (stale.batch_offsets: M = n //
batch_size near-equal parts); `loss_fn(out, y_m)` must return the batch's mean loss.

How the harness's weights reach the module: each stage's parameters are views of one flat tensor
that the adapter owns (made once, like a flat-parameter wrapper), so the modules are called as
they are, with no per-call reparametrisation. A pass copies the w_s it is given into that tensor
before it runs (O(d_s), float32 cast in the copy): a forward pass its weights, a backward pass
its own, written without autograd's version check, so that methods without weight stashing
differentiate with the weights of the backward pass and the activations of the forward pass, as
PipeDream does. The harness runs one op at a time and every op writes its weights first, so
micro-batches in flight share the tensor safely. Where the dtypes agree (float64 on the CPU) a
stage of 2^16 parameters or more copies nothing: at a forward the harness pins (forward(...,
pinned=True): the backward of that micro-batch reads w_s at the same address, the weight stash
or, without stashing, the live block that the steps in between change in place), the parameters
are pointed at w_s itself for the call, so autograd saves views of the harness's weights and the
backward finds there the weights it must use; the parameters point back at the adapter's tensor
right after the call. Forwards the harness does not pin (PipeMare's predicted weights, a resumed
run's recomputed micro-batches, a block that does not start on the vector alignment of the
harness's build, which goes through its column buffer) copy as above. A parameter shared between two stages is refused
(each stage is its own block of w). Forward activations and their gradients stay the modules'
tensors, on their device, between stages (the harness holds them, python/stage_model_objective.hpp;
a checkpoint copies the gradients in flight out, and a resumed run hands them back as arrays).
Only the parameter gradients cross into the harness's float64 storage: on the CPU each backward
copies (casts) them into it in place (backward(..., into=)), from a GPU they come over in the
model's dtype and the harness casts them.

Initial point: the modules' own parameters as handed over (every seed starts there), or, with
init="reset", each submodule's reset_parameters() under torch.manual_seed(seed).
Dropout: every stage's forward pass draws from a generator seeded by (run seed, stage, batch),
so f_m is one deterministic function, the same in a resumed run, and f = (1/M) Σ f_m is what
the metrics measure (validation_loss runs in eval mode, without dropout). A buffer that a
forward pass changes (BatchNorm's running statistics) would be state outside w, which a run
neither resets nor checkpoints: it is refused, as are a stage that changes its input in place
and one that returns more than a tensor (one forward of batch 0 at construction finds them);
constant buffers are fine.
"""
from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import threading

import numpy as np
import torch

from ._stale import ConfigError
from .model import StageModel, batch_offsets

_DROPOUT = (torch.nn.Dropout, torch.nn.Dropout1d, torch.nn.Dropout2d, torch.nn.Dropout3d, torch.nn.AlphaDropout,
            torch.nn.FeatureAlphaDropout)


def _stream(seed: int, stage: int, batch: int) -> int:
    """The dropout seed of (run seed, stage, batch): splitmix64 of the three, so that nearby
    triples give unrelated streams."""
    z = (int(seed) * 0x9E3779B97F4A7C15 + (int(stage) + 1) * 0xBF58476D1CE4E5B9 + (int(batch) + 1) * 0x94D049BB133111EB)
    z &= (1 << 64) - 1
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & ((1 << 64) - 1)
    return (z ^ (z >> 31)) & ((1 << 63) - 1)


def _code_bytes(fn, depth: int = 0) -> bytes:
    """the bytecode, constants and bound arguments of a callable, recursively for a
    functools.partial and a module's forward (a few levels deep); its qualified name where it has
    no Python code"""
    import functools

    if depth > 4:
        return repr(type(fn)).encode()

    if isinstance(fn, functools.partial):
        return _code_bytes(fn.func, depth + 1) + repr((fn.args, sorted(fn.keywords.items()))).encode()
    if isinstance(fn, torch.nn.Module):
        return repr(fn).encode() + _code_bytes(type(fn).forward, depth + 1)
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None:
        return (getattr(fn, "__module__", "") or "").encode() + (getattr(fn, "__qualname__", "") or repr(fn)).encode()
    out = [code.co_code, repr(code.co_names).encode()]
    out += [c.co_code if hasattr(c, "co_code") else repr(c).encode() for c in code.co_consts]
    # what a closure captured (lambda o, y: scale * F.mse_loss(o, y)): numbers, strings, callables
    for cell in getattr(getattr(fn, "__func__", fn), "__closure__", None) or ():
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        out.append(_code_bytes(v, depth + 1) if callable(v) else repr(v).encode())
    return b"".join(out)


class TorchStages(StageModel):
    """PyTorch modules as a stage-wise model (see the module's docstring).

    stages: nn.Sequential (one child per stage) or a list of modules; data: (X, y) arrays or
    tensors, n rows each (integer X, e.g. token ids, stays integer for stage 0); loss_fn(out,
    y_m) -> scalar mean loss; batch_size: the partition's batch size; validation: optional
    (X_val, y_val); dtype: torch.float64 or torch.float32; device: "cpu" or "cuda"; init:
    "module" (the parameters as handed over) or "reset"; name, description: recorded in the run
    file's /objective (the description followed by what computed the run: torch's version, the
    dtype, the device and, on the CPU, the kernels' instruction set); constants: what is known
    of f (stale.StageModel.constants), e.g. {"f_low": 0.0} for a non-negative loss, which gives
    the bound its Δ₀ = f(w_0) − f_low; threads: torch's intra-op threads for the run (default 1).

    Threads: torch's CPU kernels may split a reduction by the intra-op thread count (float32 sums
    on AVX-512 machines do: a run at 1 and at 2 threads differs in the last bits), so the model,
    not the calling process, decides it: a run sets torch.set_num_threads(threads) when it starts
    and gives the caller's setting back when it ends (running()); the count is part of the
    /objective description. A run's bits so follow the model, the data, the config, torch's version,
    the kernels' instruction set and `threads`, never the process's torch.get_num_threads()."""

    _writable_views = True  # the adapter copies w_s before autograd may keep it (see above)
    _keeps_activations = True  # forward activations stay tensors on the model's device (see above)

    def __init__(self, stages, data, loss_fn, *, batch_size: int, validation=None, dtype=torch.float64,
                 device="cpu", init: str = "module", name: str | None = None, description: str = "",
                 constants: dict | None = None, threads: int = 1):
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
            raise ConfigError(f"stale.torch: threads = {threads!r}; give torch's intra-op thread count for the run, "
                              "a positive integer (default 1)")
        self.threads = int(threads)
        self._run_lock = threading.Lock()
        modules = list(stages.children()) if isinstance(stages, torch.nn.Sequential) else list(stages)
        if not modules or not all(isinstance(m, torch.nn.Module) for m in modules):
            raise ConfigError("stale.torch: stages must be an nn.Sequential or a list of nn.Module, one per stage")
        if dtype not in (torch.float32, torch.float64):
            raise ConfigError(f"stale.torch: dtype = {dtype}; valid: torch.float32, torch.float64")
        if init not in ("module", "reset"):
            raise ConfigError(f"stale.torch: init = {init!r}; valid: 'module' (the parameters as handed over), 'reset'")
        self.device = torch.device(device)
        self.dtype = dtype
        # activations reach the stages in the model's dtype: no cast on the torch side (integer
        # inputs, token ids, stay float64 on the way: exact up to 2^53, not float32's 2^24)
        self.activation_dtype = "float32" if dtype == torch.float32 and torch.is_floating_point(torch.as_tensor(data[0][:1])) else "float64"
        self.init = init
        seen = {}
        for s, mod in enumerate(modules):
            named = list(mod.named_parameters())
            for pname, p in named:
                if not p.requires_grad:
                    raise ConfigError(f"stale.torch: stage {s}'s parameter '{pname}' does not require grad; stale trains "
                                      "every parameter of a stage: set requires_grad=True, or make it a buffer")
                if id(p) in seen and seen[id(p)] != s:
                    raise ConfigError(f"stale.torch: stage {s}'s parameter '{pname}' is also a parameter of stage "
                                      f"{seen[id(p)]}; every stage is its own block of w: give each stage its own copy")
                seen[id(p)] = s
            if not named:
                raise ConfigError(f"stale.torch: stage {s} ({type(mod).__name__}) has no parameters; every stage is a "
                                  "block of w: merge it into a neighbouring stage")
        # the adapter works on its own copies: the modules handed over keep their parameters
        # (every run starts there) and their dtype and device
        self.modules = [copy.deepcopy(m).to(device=self.device, dtype=dtype).train() for m in modules]
        self.stages = len(modules)
        self._params, self._flat = [None] * self.stages, [None] * self.stages
        for s in range(self.stages):
            self._bind(s)
        # a float64 model on the CPU views the harness's weights where it may (forward(...,
        # pinned=True)) instead of copying them in, for stages large enough that a copy costs
        # more than re-pointing each parameter twice (results/PERFORMANCE.md, "PyTorch stages")
        self._pinned_views = self.dtype == torch.float64 and self.device.type == "cpu"
        # on the CPU a backward writes its parameter gradient straight into the harness's storage
        # (backward(..., into=)); from a GPU it comes over as it is, in the model's dtype, and the
        # harness casts it on its threads (fewer bytes over the bus than a float64 copy)
        self._writes_gradients = self.device.type == "cpu"
        # w_0 as the harness takes it (host float64): not a second copy of the parameters on the device
        self._initial = [self._host(flat) for flat in self._flat]
        self._dropout = [any(isinstance(x, _DROPOUT) for x in mod.modules()) for mod in self.modules]
        X, y = data
        self.X = torch.as_tensor(X, device=self.device)
        if self.X.is_floating_point():
            self.X = self.X.to(dtype)
        self.y = torch.as_tensor(y, device=self.device)
        if self.y.is_floating_point():
            self.y = self.y.to(dtype)
        if len(self.X) != len(self.y):
            raise ConfigError(f"stale.torch: X has {len(self.X)} rows, y has {len(self.y)}; give one label row per sample")
        self.offsets = batch_offsets(len(self.X), batch_size)
        self.num_batches = len(self.offsets) - 1
        self.loss_fn = loss_fn
        self.validation = None
        if validation is not None:
            Xv, yv = validation
            Xv = torch.as_tensor(Xv, device=self.device)
            yv = torch.as_tensor(yv, device=self.device)
            self.validation = (Xv.to(dtype) if Xv.is_floating_point() else Xv, yv.to(dtype) if yv.is_floating_point() else yv)
        else:
            self.validation_loss = None  # no held-out set: the driver sees no validation_loss
        self._probe()
        self._name = name or "TorchStages"
        self.description = (description or " → ".join(type(m).__name__ for m in modules)) + f" [{self._kernels()}]"
        self.seed = 0
        self._constants = dict(constants or {})

    def _probe(self):
        """One forward of batch 0 through every stage, in train mode and without gradients, on
        the adapter's copies (their buffers restored afterwards, the user's random streams
        untouched), refuses what a run could not see or undo:
        - an output that is not one tensor (an LSTM's (out, state) tuple);
        - a stage that changes its input in place (ReLU(inplace=True) first): the input is the
          previous stage's output, which that stage's backward pass needs, or at stage 0 the
          data themselves;
        - a buffer that a forward pass changes (BatchNorm's running statistics, a module's own
          counters): state outside w that a run neither resets nor checkpoints, so the
          metrics' full passes would move it (val_loss would depend on log.every) and a resumed
          run would differ from an uninterrupted one.
        A stage that fails on batch 0 is left to the driver's probe, which reports it."""
        saved = [{n: b.detach().clone() for n, b in mod.named_buffers()} for mod in self.modules]
        weights = [[p.detach().clone() for p in self._params[s]] for s in range(self.stages)]
        problem = None
        with torch.no_grad(), torch.random.fork_rng(devices=[self.device] if self.device.type == "cuda" else []):
            a = self.X[self.offsets[0]:self.offsets[1]]
            try:
                for s, mod in enumerate(self.modules):
                    a = a.clone()
                    version = a._version
                    out = mod(a)
                    kind = type(mod).__name__
                    if not isinstance(out, torch.Tensor):
                        problem = (f"stage {s} ({kind}) returned a {type(out).__name__}; a stage returns one tensor, the "
                                   "next stage's input (of an LSTM's (out, state): out, _ = self.lstm(x))")
                    elif a._version != version:
                        problem = (f"stage {s} ({kind}) changes its input in place (an in-place op first, e.g. "
                                   "ReLU(inplace=True)); the input is the previous stage's output, which its backward "
                                   "pass needs (at stage 0 the data): make that op out of place")
                    for n, b in mod.named_buffers():
                        old = saved[s].get(n)
                        if problem is None and (old is None or b.shape != old.shape or not torch.equal(b, old)):
                            problem = (f"stage {s}'s buffer '{n}' ({type(mod.get_submodule(n.rpartition('.')[0])).__name__}) "
                                       "changes in a forward pass: state outside w that a run neither resets nor "
                                       "checkpoints (val_loss would depend on log.every, a resumed run on where it was "
                                       "cut); use BatchNorm(track_running_stats=False), LayerNorm or GroupNorm, or keep "
                                       "the state in a parameter of the stage")
                    if problem is None:
                        for (pname, p), old in zip(mod.named_parameters(), weights[s]):
                            if not torch.equal(p.detach(), old):
                                problem = (f"stage {s}'s parameter '{pname}' changes in its forward pass (an in-place op "
                                           "on the weight, e.g. self.weight.data.clamp_()): the harness owns w and "
                                           "writes it before every pass, so the change would be lost or kept depending "
                                           "on the stage's size and dtype; apply the transform out of place in the "
                                           "forward (w = self.weight.clamp(...)) instead")
                                break
                    if problem is not None:
                        break
                    a = out
            except Exception:  # noqa: BLE001 - the driver's probe runs the stage again and reports it
                pass
            finally:
                for mod, before in zip(self.modules, saved):
                    for n, b in mod.named_buffers():
                        if n in before and b.shape == before[n].shape:
                            b.copy_(before[n])
                for s in range(self.stages):
                    for p, old in zip(self._params[s], weights[s]):
                        p.data.copy_(old)
        if problem is not None:
            raise ConfigError("stale.torch: " + problem)

    def constants(self) -> dict:
        return self._constants

    def _kernels(self) -> str:
        """what computed the run, for its /objective description: torch's results follow its
        version and, on the CPU, the instruction set its kernels were chosen for (AVX-512 and
        AVX2 kernels give runs that differ in the last bits: README "Your own model")"""
        where = str(self.dtype).replace("torch.", "")
        if self.device.type == "cuda":
            where += f" on {torch.cuda.get_device_name(self.device)}"
        else:
            where += f" on cpu, {torch.backends.cpu.get_cpu_capability()} kernels"
            if os.environ.get("MKL_CBWR"):
                where += f", MKL_CBWR={os.environ['MKL_CBWR']}"
        where += f", {self.threads} intra-op thread{'s' if self.threads > 1 else ''}"
        return f"torch {torch.__version__}, {where}"

    @contextlib.contextmanager
    def running(self):
        """the context of a run (stale.run enters it around the whole run, resume included):
        torch's intra-op thread count is the model's `threads` there, the caller's after. One run
        at a time: the adapter's flat tensors and module copies are the run's state, so a second
        run on this model (another Python thread, while the first has released the GIL) is
        refused instead of mixing the two runs' weights"""
        if not self._run_lock.acquire(blocking=False):
            raise ConfigError("stale.torch: this model is already in a run (another thread); one model runs one run at "
                              "a time: give each concurrent run its own model (copy.deepcopy(model), or build another)")
        before = torch.get_num_threads()
        try:
            torch.set_num_threads(self.threads)
            yield
        finally:
            torch.set_num_threads(before)
            self._run_lock.release()

    def fingerprint(self):
        """what a resume must find again (stale.model's data_checksum): the data, the validation
        set, the modules' structure (their repr: layers, sizes, activations) and the dtype; not
        the weights, which the checkpoint holds"""
        parts = [self.X, self.y, "".join(repr(m) for m in self.modules), str(self.dtype), self._code_digest()]
        if self.validation is not None:
            parts += list(self.validation)
        return parts

    def _code_digest(self) -> str:
        """what the functions compute, as far as Python can tell: the bytecode and constants of
        every submodule class's forward and of the loss (a function, a lambda, a
        functools.partial with its arguments, or a module), so that a resume with another loss
        (MSE → L1, a factor 10) or an edited forward is refused; a builtin (C) function counts by
        its qualified name"""
        h = hashlib.sha256()
        seen = set()
        for mod in self.modules:
            for sub in mod.modules():
                if type(sub) not in seen:
                    seen.add(type(sub))
                    h.update(_code_bytes(type(sub).forward))
        h.update(_code_bytes(self.loss_fn))
        return h.hexdigest()

    @property
    def name(self) -> str:
        return self._name

    # ---- the StageModel calls
    def start(self, seed: int):
        self.seed = int(seed)

    def initial_params(self, seed: int):
        if self.init == "reset":
            torch.manual_seed(int(seed))
            for s, mod in enumerate(self.modules):
                for sub in mod.modules():
                    if hasattr(sub, "reset_parameters"):
                        sub.reset_parameters()
                self._bind(s)  # a reset_parameters() may have made new parameters
            return [self._host(flat) for flat in self._flat]
        return [b.copy() for b in self._initial]

    def batch_rows(self, m: int) -> int:
        return int(self.offsets[m + 1] - self.offsets[m])

    def input(self, m: int):
        return self.X[self.offsets[m]:self.offsets[m + 1]]

    def _activation(self, x, s: int) -> torch.Tensor:
        """the input of stage s (s = stages: the loss's): a held activation (this model's own
        tensor), or an array from elsewhere; only stage 0 reads integer inputs (token ids)"""
        if isinstance(x, torch.Tensor):
            return x.detach()
        integer = s == 0 and not torch.is_floating_point(self.X)
        return self._tensor(np.asarray(x), self.X.dtype if integer else None)

    def _gradient(self, g) -> torch.Tensor:
        """an activation gradient: a held one (this model's own tensor), or an array (a gradient
        a checkpoint restored)"""
        return g if isinstance(g, torch.Tensor) else self._tensor(np.asarray(g))

    def _tensor(self, a: np.ndarray, dtype=None) -> torch.Tensor:
        return torch.from_numpy(a).to(device=self.device, dtype=dtype or self.dtype)

    @staticmethod
    def _host(t: torch.Tensor) -> np.ndarray:
        return t.detach().to(device="cpu", dtype=torch.float64, copy=True).numpy()

    def _bind(self, s: int):
        """stage s's parameters become views of one flat tensor that holds their values"""
        params = [p for _, p in self.modules[s].named_parameters()]
        flat = torch.cat([p.detach().reshape(-1) for p in params])
        self._params[s], self._flat[s] = params, flat
        self._point(s, flat)

    def _point(self, s: int, flat: torch.Tensor):
        """stage s's parameters as views of flat (the adapter's own tensor, or the harness's
        w_s for a pinned forward)"""
        off = 0
        for p in self._params[s]:
            p.data = flat[off:off + p.numel()].view(p.shape)
            off += p.numel()

    def _load(self, s: int, w_s: np.ndarray):
        """w_s into stage s's parameters (their flat tensor), outside autograd's view: a tensor a
        pending backward pass saved sees the values of the pass that reads it next. To a GPU in
        float64, cast there (a host-side cast of a large block is one slow thread)."""
        src = torch.from_numpy(np.asarray(w_s))
        if self.device.type != "cpu":
            src = src.to(self.device)
        self._flat[s].data.copy_(src)

    def _call(self, s: int, m: int, x: torch.Tensor) -> torch.Tensor:
        if self._dropout[s] and self.modules[s].training:
            cuda = self.device.type == "cuda"
            with torch.random.fork_rng(devices=[self.device] if cuda else []):
                # the generator of the stage's device only: torch.manual_seed would also queue a
                # CUDA seeding, capturing a stack trace per call (a millisecond) where CUDA is unused
                if cuda:
                    torch.cuda.manual_seed(_stream(self.seed, s, m))
                else:
                    torch.random.default_generator.manual_seed(_stream(self.seed, s, m))
                return self.modules[s](x)
        return self.modules[s](x)

    # a stage of fewer parameters copies its weights even when it may view them: re-pointing
    # its parameters there and back costs about as much as that copy (Linear's two: 9-10 µs each
    # way, against 71 µs for an in-cache copy of 2^18 float64 values; results/PERFORMANCE.md)
    _PIN_MIN = 1 << 16

    def forward(self, s: int, m: int, x, w_s: np.ndarray, pinned: bool = False):
        x_t = self._activation(x, s)
        if s > 0:
            x_t.requires_grad_(True)
        if pinned and self._flat[s].numel() >= self._PIN_MIN:
            # the harness keeps w_s where it is until this micro-batch's backward of the stage,
            # which reads it there again (stage_forward_pinned): the parameters view it for the
            # call, so autograd saves views of the harness's own weights, not of a copy; they
            # point back at the adapter's tensor at once (nothing else sees the harness's memory)
            self._point(s, torch.from_numpy(w_s))
            try:
                out = self._call(s, m, x_t)
            finally:
                self._point(s, self._flat[s])
            return out.detach(), (x_t, out, w_s.__array_interface__["data"][0])
        self._load(s, w_s)
        out = self._call(s, m, x_t)
        return out.detach(), (x_t, out, None)

    def backward(self, s: int, m: int, grad_out: np.ndarray, w_s: np.ndarray, cache, into: np.ndarray | None = None):
        x_t, out, viewed = cache
        if viewed is None:
            self._load(s, w_s)  # the backward pass's weights; autograd's saved parameters see them
        elif viewed != w_s.__array_interface__["data"][0]:
            raise RuntimeError(f"stale.torch: stage {s}'s backward got its weights at another address than its "
                               "pinned forward viewed (the harness's stage_forward_pinned promise broken)")
        params = self._params[s]
        inputs = params + [x_t] if x_t.requires_grad else params
        grads = torch.autograd.grad(out, inputs, self._gradient(grad_out).reshape(out.shape), allow_unused=True)
        g_in = grads[len(params)] if len(grads) > len(params) else None  # None: stage 0, or an input the stage ignores (the driver fills zeros)
        g_in = g_in.detach() if g_in is not None else None  # it stays a tensor on the device: the harness holds it
        if into is not None:
            # the harness's float64 gradient storage itself (_writes_gradients, on the CPU): each
            # parameter's gradient copied (cast) into its place, no gathered vector in between
            dst, off = torch.from_numpy(into), 0
            for g, p in zip(grads, params):
                part = dst[off:off + p.numel()]
                part.zero_() if g is None else part.copy_(g.reshape(-1))
                off += p.numel()
            return into, g_in
        return self._gather(s, grads[:len(params)]).detach().cpu().numpy(), g_in

    def _gather(self, s: int, grads) -> torch.Tensor:
        """stage s's parameter gradients as one vector, in its parameters' order (zeros for a
        parameter the output does not depend on)"""
        g_w = [g if g is not None else torch.zeros_like(p) for g, p in zip(grads, self._params[s])]
        return g_w[0].reshape(-1) if len(g_w) == 1 else torch.cat([g.reshape(-1) for g in g_w])

    def loss(self, m: int, last):
        last_t = self._activation(last, self.stages).requires_grad_(True)
        value = self.loss_fn(last_t, self.y[self.offsets[m]:self.offsets[m + 1]])
        if not isinstance(value, torch.Tensor) or value.numel() != 1:
            shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise ConfigError(f"stale.torch: loss_fn returned {shape}; it must return the batch's mean loss as a "
                              "scalar tensor, differentiable in its first argument (e.g. reduction='mean')")
        (g,) = torch.autograd.grad(value, [last_t])
        return float(value.detach()), g.detach()

    def validation_loss(self, blocks) -> float:
        Xv, yv = self.validation
        with torch.no_grad():
            for mod in self.modules:
                mod.eval()
            try:
                a = Xv
                for s, w_s in enumerate(blocks):
                    self._load(s, w_s)
                    a = self.modules[s](a)
                return float(self.loss_fn(a, yv))
            finally:
                for mod in self.modules:
                    mod.train()


class _LinearStage(torch.nn.Module):
    """a ← a + X[:, cols] w over the activation [X | a]: the data ride along with the activation,
    since a module sees only its input"""

    def __init__(self, d: int, cols: slice, size: int):
        super().__init__()
        self.d, self.cols = d, cols
        self.weight = torch.nn.Parameter(torch.zeros(size, dtype=torch.float64))

    def forward(self, x):
        X, a = x[:, :self.d], x[:, self.d:]
        return torch.cat([X, a + (X[:, self.cols] @ self.weight).unsqueeze(1)], dim=1)


def least_squares_stages(config=None, *, dtype=torch.float64, device="cpu", constants: bool = True,
                         **overrides) -> TorchStages:
    """The built-in least-squares objective of a `quadratic` config as PyTorch stages (the
    oracle of stale.least_squares.LeastSquaresStages, through autograd): stage s adds X_m[:, block s]
    w_s to the last column of the activation [X_m | a], the loss is (1/2 n_m)‖a − y_m‖²."""
    from .api import objective
    o = objective(config, **overrides)
    X, y = o["X"], o["y"]
    sizes = [int(n) for n in o["block_sizes"]]
    edges = np.concatenate([[0], np.cumsum(sizes)])
    d = X.shape[1]
    stages = [_LinearStage(d, slice(int(edges[s]), int(edges[s + 1])), sizes[s]) for s in range(len(sizes))]
    data = np.concatenate([X, np.zeros((len(X), 1))], axis=1)
    offsets = o["batch_offsets"]
    model = TorchStages(stages, (data, y), lambda out, y_m: 0.5 * torch.mean((out[:, -1] - y_m) ** 2),
                        batch_size=len(X) // (len(offsets) - 1), dtype=dtype, device=device,  # n // (n // M) = M batches
                        name="TorchLeastSquares", description="least squares (1/2n)||Xw - y||^2 as S torch stages")
    if not np.array_equal(model.offsets, offsets):
        raise ValueError("least_squares_stages: the batch partition differs from the built-in objective's")
    model._constants = ({"L": o["L"], "L_exact": o["L_exact"], "mu": o["mu"], "f_star": o["f_star"],
                         "f_star_method": o["f_star_method"], "w_star": o["w_star"]} if constants else {"f_low": 0.0})
    return model


def charlm_stages(config=None, *, dtype=torch.float64, device="cpu", **overrides) -> TorchStages:
    """The char-level GPT of a `charlm` config (objectives/charlm/) as PyTorch stages
    (python/stale/torch_charlm.py): its training batches' tokens, its stage layout and its
    initial weights come from the C++ objective (stale.objective(), its registry entry's export), so a run of it
    equals the built-in run to rounding. Its f is the mean over every training batch; the
    built-in objective's value() means over 8 fixed ones (CharLmData::kEvalBatches), so compare
    batch losses and iterates, not the "loss" series."""
    from .api import objective
    from .torch_charlm import charlm_modules
    d = objective(config, **overrides)
    mods = charlm_modules(d["V"], d["E"], d["NH"], d["T"], d["S"], d["w0"], d["offsets"])
    M, N = d["inputs"].shape
    X = d["inputs"].reshape(-1).astype(np.int64)
    y = d["targets"].reshape(-1).astype(np.int64)
    return TorchStages(mods, (X, y), torch.nn.functional.cross_entropy, batch_size=N, dtype=dtype, device=device,
                       name="TorchCharLm",
                       description=f"char-level GPT, E={d['E']} heads={d['NH']} T={d['T']} B={d['B']} S={d['S']}",
                       constants={"f_low": 0.0})
