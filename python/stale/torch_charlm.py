"""The char-level GPT of objectives/charlm/ written in PyTorch (stale.torch.charlm_stages): the
same stages, parameter layout, data and initial weights as the C++ twin, so that a run of it
through stale.torch is the built-in `charlm` run to rounding (tests/python/test_stage_model_torch_charlm.py).

    stage 0          x = wte[tok] + wpe[t]                      (wte [V, E], wpe [T, E])
    stage 1 … S−2    x += attn(ln1(x)); x += mlp(ln2(x))        (llm.c's tensor order, objectives/charlm/charlm.hpp)
    stage S−1        logits = ln_f(x) W_lmᵀ                     (no bias)
    loss             mean cross-entropy over the B·T positions

Activations are [B·T, E] (row b·T + t), as in the C++ twin. The parameters of each stage are
registered in the order of its block of w (EmbeddingLayout, BlockLayout, HeadLayout), so the
harness's flat block is the stage's named_parameters() one after the other.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F


class _Embedding(torch.nn.Module):
    def __init__(self, V, E, T):
        super().__init__()
        self.T = T
        self.wte = torch.nn.Parameter(torch.zeros(V, E))
        self.wpe = torch.nn.Parameter(torch.zeros(T, E))

    def forward(self, tok):
        pos = torch.arange(tok.shape[0], device=tok.device) % self.T
        return self.wte[tok] + self.wpe[pos]


class _Block(torch.nn.Module):
    """pre-LayerNorm transformer block: causal multi-head attention with fused QKV, MLP 4E with
    GELU (tanh), llm.c's layer functions (eps 1e-5, biased variance)"""

    def __init__(self, E, NH, T):
        super().__init__()
        self.E, self.NH, self.T = E, NH, T
        z = lambda *s: torch.nn.Parameter(torch.zeros(*s))  # noqa: E731 (the values come from w)
        self.ln1w, self.ln1b = z(E), z(E)
        self.qkvw, self.qkvb = z(3 * E, E), z(3 * E)
        self.attprojw, self.attprojb = z(E, E), z(E)
        self.ln2w, self.ln2b = z(E), z(E)
        self.fcw, self.fcb = z(4 * E, E), z(4 * E)
        self.fcprojw, self.fcprojb = z(E, 4 * E), z(E)

    def forward(self, x):
        E, NH, T = self.E, self.NH, self.T
        B = x.shape[0] // T
        h = F.layer_norm(x, (E,), self.ln1w, self.ln1b, 1e-5)
        qkv = F.linear(h, self.qkvw, self.qkvb).view(B, T, 3, NH, E // NH)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))  # [B, NH, T, hs]
        att = (q @ k.transpose(-1, -2)) / math.sqrt(E // NH)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B * T, E)
        x = x + F.linear(y, self.attprojw, self.attprojb)
        h = F.layer_norm(x, (E,), self.ln2w, self.ln2b, 1e-5)
        h = F.gelu(F.linear(h, self.fcw, self.fcb), approximate="tanh")
        return x + F.linear(h, self.fcprojw, self.fcprojb)


class _Head(torch.nn.Module):
    def __init__(self, V, E):
        super().__init__()
        self.E = E
        self.lnfw, self.lnfb = torch.nn.Parameter(torch.zeros(E)), torch.nn.Parameter(torch.zeros(E))
        self.lmw = torch.nn.Parameter(torch.zeros(V, E))

    def forward(self, x):
        return F.linear(F.layer_norm(x, (self.E,), self.lnfw, self.lnfb, 1e-5), self.lmw)


def charlm_modules(V: int, E: int, NH: int, T: int, S: int, w0=None, offsets=None) -> list:
    """the S stages; with w0 and the block offsets, their parameters set from the flat w0"""
    # built in float64, so that the weights handed over arrive exactly (TorchStages casts after)
    mods = [m.double() for m in [_Embedding(V, E, T)] + [_Block(E, NH, T) for _ in range(S - 2)] + [_Head(V, E)]]
    if w0 is not None:
        with torch.no_grad():
            for s, mod in enumerate(mods):
                block = torch.as_tensor(np.asarray(w0[offsets[s]:offsets[s + 1]]), dtype=torch.float64)
                off = 0
                for p in mod.parameters():
                    p.copy_(block[off:off + p.numel()].view(p.shape))
                    off += p.numel()
                if off != block.numel():
                    raise ValueError(f"charlm stage {s}: {off} parameters, the C++ block has {block.numel()}")
    return mods
