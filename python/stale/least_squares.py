"""The built-in least-squares objective written as a Python stage model, in NumPy: the oracle
that checks the Python-model path against the C++ `quadratic` (tests/python/test_stage_model.py),
and the smallest complete example of a stale.StageModel.

    f(w) = (1/M) Σ_m (1/(2 n_m)) ‖X_m w − y_m‖²,   stage s: a ← a + X_m[:, block s] w_s

The data, the batch partition, the block layout and the constants come from the C++ objective
itself (stale.objective(config): its generator, not a second copy of it), so a run of
`LeastSquaresStages(config)` under a method equals the run of `config` with objective.name =
"quadratic" to rounding (the order of each sum differs).
"""
from __future__ import annotations

import numpy as np

from .model import StageModel


class LeastSquaresStages(StageModel):
    """Least squares over the data of a `quadratic` config, one stage per block of w."""

    description = "least squares (1/2n)||Xw - y||^2 as S linear stages"

    def __init__(self, config=None, *, constants: bool = True, **overrides):
        from .api import objective
        o = objective(config, **overrides)
        if o["X"] is None:
            raise ValueError("LeastSquaresStages needs dense data (objective.storage)")
        self.X, self.y = o["X"], o["y"]
        self.offsets = o["batch_offsets"]
        self.sizes = [int(n) for n in o["block_sizes"]]
        self.block = np.concatenate([[0], np.cumsum(self.sizes)])
        self.stages = len(self.sizes)
        self.num_batches = len(self.offsets) - 1
        # the exact constants, as the built-in objective records them; constants=False leaves
        # L, μ, f_* unknown (the bound then uses the estimated L: log.L_estimate) and states only
        # what any squared loss knows, f ≥ 0, for the bound's Δ₀ = f(w_0) − f_low
        self._constants = ({"L": o["L"], "L_exact": o["L_exact"], "mu": o["mu"], "f_star": o["f_star"],
                            "f_star_method": o["f_star_method"], "w_star": o["w_star"]} if constants else
                           {"f_low": 0.0})

    def constants(self) -> dict:
        return self._constants

    def fingerprint(self):
        """what a resume must find again: the data (input(m) is zeros, X and y are the model's)"""
        return [self.X, self.y]

    def _rows(self, m):
        return slice(self.offsets[m], self.offsets[m + 1])

    def initial_params(self, seed):
        return [np.zeros(n) for n in self.sizes]  # the linear models start at w_0 = 0

    def batch_rows(self, m):
        return int(self.offsets[m + 1] - self.offsets[m])

    def input(self, m):
        return np.zeros(self.batch_rows(m))

    def forward(self, s, m, x, w_s):
        Xs = self.X[self._rows(m), self.block[s]:self.block[s + 1]]
        return x + Xs @ w_s, None  # a linear stage keeps nothing for its backward pass

    def backward(self, s, m, grad_out, w_s, cache):
        Xs = self.X[self._rows(m), self.block[s]:self.block[s + 1]]
        return Xs.T @ grad_out, grad_out  # d(a + X_s w_s)/da = I

    def loss(self, m, last):
        r = last - self.y[self._rows(m)]
        return 0.5 * float(r @ r) / len(r), r / len(r)
