"""Your own model under exact pipeline staleness: a stage-wise objective defined in Python.

Subclass `StageModel` (or let `stale.torch.TorchStages` build one from PyTorch modules) and
pass it to `stale.run(config, model=...)`: the harness's own methods, schedules, version store,
metrics observer and run file drive it, as they drive the built-in objectives. The model is

    f(w) = (1/M) Σ_m f_m(w),   f_m = loss_m(stage_{S-1}( … stage_0(input_m; w_0) …; w_{S-1}))

over a fixed partition of the data into M mini-batches (m = 0 … M-1), w = (w_0, …, w_{S-1})
one flat float64 block per stage. What a subclass provides:

    stages: int                                  S
    num_batches: int                             M
    initial_params(seed) -> [w_0, …, w_{S-1}]    one 1-D array per stage (their sizes are the blocks)
    batch_rows(m) -> int                         samples in batch m (the loss is the batch's mean)
    input(m) -> array (rows, …)                  the activation entering stage 0
    forward(s, m, x, w_s) -> (out, cache)        out: (rows, …); cache: anything backward needs
    backward(s, m, grad_out, w_s, cache) -> (grad_w_s, grad_in)
    loss(m, last) -> (loss, grad_last)           the batch's mean loss and d loss / d last
    validation_loss(blocks) -> float             optional: held-out loss (/metrics/val_loss)
    start(seed)                                  optional: told the run's seed before anything else
    running() -> context manager                 optional: the context every call of a run is made
                                                 in (stale.torch fixes torch's intra-op threads there)
    fingerprint() -> [array | bytes | str, …]    optional: what identifies the model's data and
                                                 function (default: every batch's input(m))
    constants() -> dict                          optional: L, L_exact, mu, f_star, f_low, w_star,
                                                 f_star_method, f_star_is_lower_bound

Why backward gets w_s again: methods without weight stashing (pipedream-nostash, paci,
pipemare) run a stage's backward pass with the weights as they are when it runs, which differ
from those its forward pass saw; `cache` holds what the forward pass computed. w_s is a
read-only view of the harness's storage, valid during the call only (copy it to keep it); a
model that sets `_pinned_views = True` is also called as forward(s, m, x, w_s, pinned=True)
where the harness keeps w_s at its address until that micro-batch's backward of stage s, which
reads it there (its values may change in place in between), so the model may keep views of it
(stale.torch does, in float64 on the CPU); one that sets `_writes_gradients = True` is called as
backward(..., into=g), g a writable float64 view of the harness's storage for grad_w_s, and may
write the gradient there and return g itself.
Activations arrive as C-ordered float64 arrays the model may keep (in its cache); a model with
`activation_dtype = "float32"` gets them in float32 (the harness keeps them in float64; the
cast happens in the copy). Results may be float32 or float64 (other types become float64).

A resume checks that it continues the same model: the run file records a SHA-256 over the
stages' sizes, the batches' rows and the model's fingerprint() (without one, every input(m); a
model whose loss reads data of its own, labels, should define it: stale.torch's covers X, y, the
validation set, the modules' structure and the dtype), and a resume with another one is refused
(force=True continues, recorded as resume_forced).

Checks (each a one-line stale.ConfigError, raised before any run file exists where the probe of
batch 0 at the initial point finds it): a stage whose output changes shape between calls (rows
follow the batch), gradients whose shapes or sizes do not match (or None), results that are not
real numbers (complex, text) or a loss that is not one, a stage without parameters,
empty batches, a non-finite loss at the initial point. A loss that becomes non-finite during
the run is not an error: the run ends with status "diverged" (log.divergence), a recorded result.
"""
from __future__ import annotations

import contextlib
import hashlib
import math

import numpy as np

from ._stale import ConfigError


class StageModel:
    """Base class of a stage-wise model defined in Python (see the module's docstring)."""

    stages: int = 0
    num_batches: int = 0
    description: str = ""

    @property
    def name(self) -> str:
        return type(self).__name__

    def initial_params(self, seed: int):
        raise NotImplementedError

    def batch_rows(self, m: int) -> int:
        raise NotImplementedError

    def input(self, m: int):
        raise NotImplementedError

    def forward(self, s: int, m: int, x, w_s):
        raise NotImplementedError

    def backward(self, s: int, m: int, grad_out, w_s, cache):
        raise NotImplementedError

    def loss(self, m: int, last):
        raise NotImplementedError

    # validation_loss(blocks) is optional: defined only by models with a held-out set
    def constants(self) -> dict:
        return {}


def batch_offsets(n: int, batch_size: int) -> np.ndarray:
    """The harness's fixed partition of n samples into M = n // batch_size near-equal batches
    (objectives/linear/linear_data.cpp partition_batches: the first n mod M batches get one sample more):
    M + 1 offsets. A partition that cannot be made is a one-line stale.ConfigError."""
    n, batch_size = int(n), int(batch_size)
    if batch_size < 1:
        raise ConfigError(f"batch_size = {batch_size}: a batch holds at least one sample; give 1 ≤ batch_size ≤ {n}")
    if n < batch_size:
        raise ConfigError(f"batch_size = {batch_size} exceeds the {n} samples; give 1 ≤ batch_size ≤ {n}")
    M = n // batch_size
    sizes = np.full(M, n // M, dtype=np.int64)
    sizes[: n % M] += 1
    return np.concatenate([[0], np.cumsum(sizes)])


_CONSTANT_KEYS = {"L", "L_exact", "mu", "f_star", "f_low", "w_star", "f_star_method", "f_star_is_lower_bound"}


def _name(model) -> str:
    """the model's name: its `name`, else its class's (a model need not subclass StageModel)"""
    return str(getattr(model, "name", None) or type(model).__name__)


def _fail(model, what: str):
    raise ConfigError(f"python model {_name(model)}: {what}")


def _c_order(a, model=None, what: str = "an array") -> np.ndarray:
    """a as a C-ordered float64 array, or float32 where it is one: the C++ side casts a float32
    array while copying it, one pass instead of two. Complex, object or text values are refused
    (a cast would drop an imaginary part, or fail in numpy's words)."""
    a = np.asarray(a)
    if a.dtype.kind not in "fiub":
        _fail(model, f"{what} has dtype {a.dtype}; return real numbers (float64 or float32)")
    return np.ascontiguousarray(a, dtype=a.dtype if a.dtype in (np.float32, np.float64) else np.float64)


def _host(a) -> np.ndarray:
    """a as a NumPy array on the host: a tensor (stale.torch's held activations, its data)
    detached and copied off its device, anything else through np.asarray"""
    return a.detach().cpu().numpy() if hasattr(a, "detach") else np.asarray(a)


def _pair(model, result, call: str, names: str):
    """the two results a call returns, or a one-line error naming the call"""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        _fail(model, f"{call} returned {type(result).__name__}; return the pair ({names})")
    return result


def _check_constants(model, c: dict):
    """what constants() claims must be possible: the bound and the summary trust them (L < 0 or
    μ > L gave a bound of the wrong sign, not an error)"""
    def num(key):
        v = c.get(key)
        if v is None:
            return None
        try:
            v = float(v)
        except (TypeError, ValueError):
            _fail(model, f"constants()['{key}'] = {c[key]!r} is not a number")
        return v
    L, mu, f_star, f_low = num("L"), num("mu"), num("f_star"), num("f_low")
    if L is not None and not (math.isfinite(L) and L > 0):
        _fail(model, f"constants()['L'] = {L}: a smoothness constant is positive and finite (leave it out to have L "
                     "estimated along the run)")
    if mu is not None and not (math.isfinite(mu) and mu >= 0):
        _fail(model, f"constants()['mu'] = {mu}: a strong-convexity constant is ≥ 0")
    if mu is not None and L is not None and mu > L:
        _fail(model, f"constants(): mu = {mu} exceeds L = {L}; μ ≤ L for any function")
    for key, v in (("f_star", f_star), ("f_low", f_low)):
        if v is not None and not math.isfinite(v):
            _fail(model, f"constants()['{key}'] = {v}: give a finite value")
    if f_star is not None and f_low is not None and f_low > f_star:
        _fail(model, f"constants(): f_low = {f_low} exceeds f_star = {f_star}; a lower bound is ≤ the minimum")


class _Driver:
    """The C++ objective's counterpart (python/stage_model_objective.cpp calls it): converts
    between the model's arrays and the harness's float64 2-D activations, and checks what the
    model returns. One per run."""

    def __init__(self, model):
        self.model = model
        for attr in ("stages", "num_batches"):
            v = getattr(model, attr, None)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                _fail(model, f"{attr} = {v!r}; give a positive integer")
        for attr in ("initial_params", "batch_rows", "input", "forward", "backward", "loss"):
            if not callable(getattr(model, attr, None)):
                _fail(model, f"has no method {attr}(); see stale.StageModel")
        self.stages = int(model.stages)
        self.M = int(model.num_batches)
        self.sizes: list[int] = []
        self.rows: list[int] = []
        self.in_shape: list[tuple | None] = [None] * (self.stages + 1)  # feature shape entering stage s (S: the loss)
        self.read_only = not getattr(model, "_writable_views", False)
        # a model that keeps its activations (stale.torch) gets its forward activations and their
        # gradients back as it returned them, held by the C++ objective between calls, instead of
        # float64 copies (a gradient restored from a checkpoint arrives as an array); a NumPy model
        # gets copies, so that one stage's in-place work cannot reach another's cache
        self.keeps = bool(getattr(model, "_keeps_activations", False))
        # a model that says _pinned_views is told, by forward(..., pinned=True), where w_s stays
        # at its address and is what this micro-batch's backward of the stage reads again (its
        # values may change in place before then): it may view w_s instead of copying it
        # (stale.torch in float64 on the CPU)
        self.pins = bool(getattr(model, "_pinned_views", False))
        # a model that says _writes_gradients gets backward(..., into=g) with g a view of the
        # harness's float64 storage for the stage's parameter gradient, and may write it there and
        # return g itself (no copy on the way back)
        self.writes = bool(getattr(model, "_writes_gradients", False))
        self.activation_dtype = str(getattr(model, "activation_dtype", "float64"))
        if self.activation_dtype not in ("float64", "float32"):
            _fail(model, f"activation_dtype = {self.activation_dtype!r}; valid: 'float64', 'float32'")

    def running(self):
        """the model's run context (its optional running()), else one that does nothing"""
        enter = getattr(self.model, "running", None)
        return enter() if callable(enter) else contextlib.nullcontext()

    # ---- shapes: a stage's output keeps its shape between calls (its rows follow the batch)
    def _features(self, s: int, a: np.ndarray, m: int, what: str) -> tuple:
        if a.ndim < 1 or a.shape[0] != self.rows[m]:
            _fail(self.model, f"{what} has shape {tuple(a.shape)} for batch {m}; its first axis must be the batch's "
                              f"{self.rows[m]} rows (batch_rows({m}))")
        feat = tuple(a.shape[1:])
        if self.in_shape[s] is None:
            self.in_shape[s] = feat
        elif self.in_shape[s] != feat:
            _fail(self.model, f"{what} has shape {tuple(a.shape)} for batch {m}, earlier (rows, {', '.join(map(str, self.in_shape[s]))}); "
                              "a stage's output must keep its shape between calls")
        return feat

    def _flat(self, a: np.ndarray, m: int, what: str) -> np.ndarray:
        return _c_order(a, self.model, what).reshape(self.rows[m], -1)

    def _shaped(self, s: int, x: np.ndarray, m: int) -> np.ndarray:
        return x.reshape((self.rows[m],) + self.in_shape[s])

    def _view(self, w):
        if self.read_only:
            w.flags.writeable = False
        return w

    # ---- the calls of python/stage_model_objective.cpp
    def _array(self, a):
        return a if self.keeps and hasattr(a, "shape") and hasattr(a, "ndim") else np.asarray(a)

    def input(self, m: int):
        a = self._array(self.model.input(m))
        self._features(0, a, m, "input(m)")
        return a if self.keeps else self._flat(a, m, "input(m)")

    def forward(self, s: int, m: int, x, w_s: np.ndarray, pinned: bool = False):
        x = x if self.keeps else self._shaped(s, x, m)
        result = (self.model.forward(s, m, x, self._view(w_s), pinned=True) if pinned and self.pins else
                  self.model.forward(s, m, x, self._view(w_s)))
        out, cache = _pair(self.model, result, f"forward({s}, m, x, w_s)", "out, cache")
        out = self._array(out)
        self._features(s + 1, out, m, f"stage {s}'s output")
        return (out if self.keeps else self._flat(out, m, f"stage {s}'s output")), cache

    def loss(self, m: int, last):
        last = last if self.keeps else self._shaped(self.stages, last, m)
        value, grad = _pair(self.model, self.model.loss(m, last), "loss(m, last)", "loss, grad_last")
        grad = self._array(grad)
        if tuple(grad.shape) != (self.rows[m],) + self.in_shape[self.stages]:
            _fail(self.model, f"loss({m}, last) returned a gradient of shape {tuple(grad.shape)}; expected last's shape "
                              f"{(self.rows[m],) + self.in_shape[self.stages]}")
        try:
            value = float(value)
        except (TypeError, ValueError):
            _fail(self.model, f"loss({m}, last) returned a loss of type {type(value).__name__}; return a float, the "
                              "batch's mean loss")
        return value, (grad if self.keeps else self._flat(grad, m, "loss's gradient"))

    def backward(self, s: int, m: int, grad_out: np.ndarray, w_s: np.ndarray, cache, into: np.ndarray | None = None):
        # a held gradient goes back as it was returned; an array from the harness is reshaped
        shape = (self.rows[m],) + self.in_shape[s + 1]
        if not (self.keeps and tuple(grad_out.shape) == shape):
            grad_out = grad_out.reshape(shape)
        # into: given by the C++ objective only where the model says _writes_gradients (prepare's info)
        result = (self.model.backward(s, m, grad_out, self._view(w_s), cache, into=into) if into is not None else
                  self.model.backward(s, m, grad_out, self._view(w_s), cache))
        g_w, g_in = _pair(self.model, result, f"backward({s}, m, grad_out, w_s, cache)", "grad_w_s, grad_in")
        if g_w is None:
            _fail(self.model, f"backward of stage {s} returned None for its parameter gradient; return the gradient "
                              f"of its {self.sizes[s]} parameters")
        if g_w is not into:  # written in place: the harness's own float64 storage, of the stage's size
            g_w = _c_order(g_w, self.model, f"stage {s}'s parameter gradient").reshape(-1)
        if g_w.size != self.sizes[s]:
            _fail(self.model, f"backward of stage {s} returned {g_w.size} parameter gradients; the stage has "
                              f"{self.sizes[s]} parameters")
        if self.keeps and s == 0:
            return g_w, None  # the data's gradient: the harness does not keep it
        g_in = self._array(g_in) if g_in is not None else np.zeros((self.rows[m],) + self.in_shape[s])
        if tuple(g_in.shape) != (self.rows[m],) + self.in_shape[s]:
            _fail(self.model, f"backward of stage {s} returned an input gradient of shape {tuple(g_in.shape)}; expected "
                              f"the input's shape {(self.rows[m],) + self.in_shape[s]}")
        return g_w, (g_in if self.keeps else self._flat(g_in, m, f"stage {s}'s input gradient"))

    def values(self, a):
        """a held activation gradient as a C-order [rows × features] array (a checkpoint's copy)"""
        a = _host(a)
        return _c_order(a, self.model, "a held activation gradient").reshape(a.shape[0], -1)

    def initial_point(self, seed: int) -> np.ndarray:
        blocks = self.model.initial_params(int(seed))
        if isinstance(blocks, np.ndarray) and blocks.ndim == 1:
            _fail(self.model, "initial_params(seed) returned one vector; return one 1-D array per stage")
        blocks = [np.ascontiguousarray(b, dtype=np.float64).reshape(-1) for b in blocks]
        if len(blocks) != self.stages:
            _fail(self.model, f"initial_params(seed) returned {len(blocks)} blocks for {self.stages} stages; "
                              "return one array per stage")
        sizes = [b.size for b in blocks]
        for s, n in enumerate(sizes):
            if n == 0:
                _fail(self.model, f"stage {s} has no parameters; every stage is a block of w: merge it into a neighbour")
        if self.sizes and sizes != self.sizes:
            _fail(self.model, f"initial_params(seed) returned blocks of sizes {sizes}, earlier {self.sizes}")
        self.sizes = sizes
        w = np.concatenate(blocks)
        if not np.all(np.isfinite(w)):
            _fail(self.model, "initial_params(seed) holds a non-finite value")
        return w

    def validation_loss(self, w: np.ndarray) -> float:
        offsets = np.concatenate([[0], np.cumsum(self.sizes)])
        w = self._view(w)
        return float(self.model.validation_loss([w[offsets[s]:offsets[s + 1]] for s in range(self.stages)]))

    def data_checksum(self) -> tuple[str, int]:
        """SHA-256 (hex) of what a resume must find again, and the bytes it covered: the
        stages' sizes, the batches' rows and the model's fingerprint() (else every input(m));
        the C++ objective asks for it where a run file is written"""
        h = hashlib.sha256(repr((self.sizes, self.rows, self.activation_dtype)).encode())
        fingerprint = getattr(self.model, "fingerprint", None)
        parts = fingerprint() if callable(fingerprint) else (self.model.input(m) for m in range(self.M))
        n = 0
        for part in parts:
            if isinstance(part, str):
                part = part.encode()
            if not isinstance(part, bytes):
                a = np.ascontiguousarray(_host(part))
                h.update(f"{a.dtype.str}{a.shape}".encode())
                part = a.view(np.uint8).reshape(-1) if a.size else b""
            h.update(part)
            n += len(part)
        return h.hexdigest(), n

    def prepare(self, seed: int) -> dict:
        """What the C++ objective needs, after a probe of batch 0 through every stage at the
        initial point (forward, loss, backward): the model's shape, size and finiteness
        errors surface here, before the run file exists."""
        self.rows = []
        if callable(getattr(self.model, "start", None)):
            self.model.start(int(seed))  # optional: the run's seed (stale.torch seeds its dropout streams with it)
        w0 = self.initial_point(seed)
        for m in range(self.M):
            r = self.model.batch_rows(m)
            if not isinstance(r, (int, np.integer)) or r < 1:
                _fail(self.model, f"batch_rows({m}) = {r!r}: the data cannot be partitioned into {self.M} non-empty "
                                  "batches; give fewer batches (num_batches) or more samples")
            self.rows.append(int(r))
        offsets = np.concatenate([[0], np.cumsum(self.sizes)])
        x = self.input(0)
        caches = []
        for s in range(self.stages):
            w_s = w0[offsets[s]:offsets[s + 1]].copy()
            x, c = self.forward(s, 0, x, w_s)
            caches.append(c)
        value, g = self.loss(0, x)
        if not np.isfinite(value):
            _fail(self.model, f"loss of batch 0 at the initial point is {value}; a model must start from a finite loss")
        for s in reversed(range(self.stages)):
            w_s = w0[offsets[s]:offsets[s + 1]].copy()
            g_w, g = self.backward(s, 0, g, w_s, caches[s])
            if not np.all(np.isfinite(g_w)):
                _fail(self.model, f"stage {s}'s parameter gradient at the initial point is not finite")
        constants = dict(self.model.constants() or {})
        unknown = set(constants) - _CONSTANT_KEYS
        if unknown:
            _fail(self.model, f"constants() has unknown keys {sorted(unknown)}; valid: {sorted(_CONSTANT_KEYS)}")
        _check_constants(self.model, constants)
        if "f_star" not in constants and "f_low" not in constants:
            # the bound's Δ₀ = f(w₀) − f_low needs one of them: say so once, not "bound=nan" on every line
            import warnings
            warnings.warn(f"{_name(self.model)}: constants() gives neither f_star nor f_low, so the run's bound is NaN; "
                          "give a lower bound of the loss, e.g. constants={'f_low': 0.0} for a loss ≥ 0", stacklevel=3)
        if "w_star" in constants:
            constants["w_star"] = np.ascontiguousarray(constants["w_star"], dtype=np.float64).reshape(-1)
            if constants["w_star"].size != w0.size:
                _fail(self.model, f"constants()['w_star'] has {constants['w_star'].size} entries, w has {w0.size}")
        desc = str(getattr(self.model, "description", "") or "")
        return {"block_sizes": self.sizes, "rows": self.rows, "input_width": int(np.prod(self.in_shape[0] or (1,))),
                "description": f"python model {_name(self.model)}" + (f": {desc}" if desc else ""),
                "has_validation": callable(getattr(self.model, "validation_loss", None)),
                "activation_dtype": self.activation_dtype, "keeps_activations": self.keeps,
                "writes_gradients": self.writes,
                "w0": w0, "constants": constants}
