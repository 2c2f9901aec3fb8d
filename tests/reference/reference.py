"""An independent, slow, obviously correct NumPy reference for the harness's methods.

Written from docs/theory.md (§1, §2, §4–§7), not from the C++ code: every update is
computed from the definitions with plain loops and full copies, nothing is cached or
incremental. tests/reference/make_golden.py runs it and writes golden trajectories that the
C++ test tests/reference/test_golden.cpp holds the harness to (1e-12 relative).

What it computes
----------------
Objectives (docs/theory.md §7). X is n × d, y has n entries; the samples are split into M = n / b
mini-batches of b consecutive rows (batch m = rows m·b … m·b + b − 1; n must be a multiple of
b), and w into S contiguous blocks of d / S coordinates (d must be a multiple of S; the
harness's "near-equal" blocks are then equal). The batch objective is

    f_m(w) = (1/b) Σ_{i in batch m} ℓ(x_iᵀ w, y_i) + (λ/2) ‖w‖² + ν Σ_j w_j² / (1 + w_j²),
    f = (1/M) Σ_m f_m,

with ℓ(a, y) = ½ (a − y)² (least squares, λ = 0) or ℓ(a, y) = log(1 + e^a) − y·a (binary
cross-entropy, y ∈ {0, 1}), and ν ≥ 0 the smooth nonconvex regulariser of the nonconvex
benchmarks (the harness's objective.nonconvex_reg; ν = 0 is the convex objective). A linear
model is a pipeline: stage s adds X_m[:, slice_s] u_s to a running activation, the last stage
applies the loss; the backward of stage s returns

    g_s = X_m[:, slice_s]ᵀ ℓ'(a, y) / b + λ v_s + 2ν v_s / (1 + v_s²)²   (elementwise)

where a was built from the blocks u_0 … u_{S−1} the forwards of this micro-batch read and v_s
is the block the backward reads (the stashed u_s, or the current block: §4, §5).

RPD (§2): given a delay table D (K × S), stages s_k and batches m_k, z_k has block i from
w_{k − D[k, i]}, and w_{k+1} = w_k except block s_k, which takes the step
−γ ∇_{s_k} f_{m_k}(z_k).

Schedule methods: a unit-slot simulator (`slot_schedule`) decides which op every stage runs in
every slot; the ops are then executed in the serial order of §4 (slot by slot, within a slot
in increasing stage order) on one set of current blocks (or one per LocalSGD replica). An F
reads its stage's current block; a B computes g_s above and adds it to its stage's
accumulator; after every `a`-th B of a stage the block steps by −γ · (sum of the a gradients)/a.
Each such step is one block update (k advances by one) and is recorded with the iterate after
it and the loss f at that iterate.

Conventions docs/theory.md leaves open, and how this reference fixes them (as the harness's README,
docs and schedule tests define them: README "Design decisions", tests/pipeline/
test_async_schedules.cpp, test_localsgd_schedule.cpp, tests/optimizers/test_schedule_methods.cpp):
- batch order: schedule methods read the batches cyclically, micro-batch mb ↦ batch mb mod M
  (§8: "PD reads the data batches in a fixed cyclic order"); RPD's draws are inputs here.
- micro-batches are admitted in order 0, 1, 2, … on every stage, and every stage runs its
  B's in the same order (first in, first out), except GPipe, which runs a group's B's in
  reverse micro-batch order (torchgpipe's order, as the header of the harness's
  src/pipeline/schedules_sync.cpp states; the golden test first disagreed with the
  reference on exactly this: the micro-batch each step is reported with, not its value).
- simultaneous ops: an op may start only if its dependencies finished in an earlier slot;
  ops of one slot are serialised in increasing stage order, so the k-th update is the k-th
  optimizer step in that order (§4's delay convention); a stage never runs two ops in a slot.
- PipeDream (with and without stashing): only stage 0 is limited (fewer than S micro-batches
  in flight); a stage runs B until its first B, then alternates F and B when both are ready
  (the op other than the one it ran last). With stashing v_s = u_s; without it v_s is the
  current block at B time. a = 1.
- PACI (accumulation a): stage s holds fewer than S − s in flight, B first whenever a B is
  ready; no stashing (v_s = current block); a step after every a-th B of a stage, with the
  mean of the a gradients (each taken at its own B time).
- 2BW (accumulation m): the same bounded backward-first async 1F1B schedule as PACI, with
  stashing: F reads the newest block, B the version its F read; a step after every m-th B
  with the mean of the m gradients. "Double buffering" is then a statement about how many
  versions are alive (two when m ≥ S), not a different read rule.
- GPipe and 1F1B-flush (accumulation m): micro-batches in groups of m; a group's first F
  waits until every B of the previous group has finished (the flush); GPipe runs all of a
  stage's F's of the group before its B's (in reverse order, above), 1F1B-flush holds fewer than S − s in flight per
  stage, B first. Every read is fresh; each stage steps once per group, on its last B of the
  group, with the mean of the m gradients.
- LocalSGD (R replicas, H local steps, §6): micro-batch mb belongs to replica mb mod R, a
  round is R·H micro-batches; replica r's F on stage s waits until r's previous B on s is
  done, a round's first F waits until the previous round's last micro-batch has finished its
  B on stage 0; PipeDream's 1F1B preference. Every B steps its replica's block (a = 1); on the
  last B of a round on stage s, block s is replaced by its replica average. The recorded
  iterate is the replica average (1/R) Σ_r w_r.
"""

import numpy as np

# ---------------------------------------------------------------------------------------
# objectives (docs/theory.md §7)


class LinearObjective:
    """f = (1/M) Σ_m f_m over M batches of b consecutive rows; w in S equal blocks."""

    def __init__(self, X, y, loss, lam, stages, batch_size, nonconvex=0.0):
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        n, d = X.shape
        assert loss in ("squared", "logistic")
        assert n % batch_size == 0, "the reference needs n to be a multiple of the batch size"
        assert d % stages == 0, "the reference needs d to be a multiple of S"
        self.X, self.y, self.loss, self.lam = X, y, loss, float(lam)
        assert nonconvex >= 0
        self.nu = float(nonconvex)
        self.S, self.b, self.M = stages, batch_size, n // batch_size
        self.d, self.n = d, n
        self.ds = d // stages

    def block_slice(self, s):
        return slice(s * self.ds, (s + 1) * self.ds)

    def batch_rows(self, m):
        return slice(m * self.b, (m + 1) * self.b)

    def ell(self, a, y):
        if self.loss == "squared":
            return 0.5 * (a - y) ** 2
        return np.logaddexp(0.0, a) - y * a

    def ell_prime(self, a, y):
        if self.loss == "squared":
            return a - y
        return 1.0 / (1.0 + np.exp(-a)) - y

    # (ν = 0 adds nothing at all, so the convex cases compute exactly what they did before ν)
    def reg_value(self, w):
        """ν Σ_j w_j² / (1 + w_j²), nonconvex for ν > 0."""
        return self.nu * np.sum(w * w / (1.0 + w * w))

    def reg_grad(self, v):
        """Its gradient 2ν v / (1 + v²)², elementwise (of a whole point or one block)."""
        return 2.0 * self.nu * v / (1.0 + v * v) ** 2

    def batch_value(self, w, m):
        r = self.batch_rows(m)
        a = self.X[r] @ w
        v = np.mean(self.ell(a, self.y[r])) + 0.5 * self.lam * np.dot(w, w)
        return v + self.reg_value(w) if self.nu else v

    def value(self, w):
        """f(w) = (1/M) Σ_m f_m(w)."""
        return sum(self.batch_value(w, m) for m in range(self.M)) / self.M

    def batch_block_grad(self, z, m, s):
        """∇_{w^(s)} f_m(z): the gradient of one block at one point."""
        r, c = self.batch_rows(m), self.block_slice(s)
        a = self.X[r] @ z
        g = self.X[r][:, c].T @ self.ell_prime(a, self.y[r]) / self.b + self.lam * z[c]
        return g + self.reg_grad(z[c]) if self.nu else g

    # the pipeline view: forward reads u_s per stage, backward of stage s reads v_s
    def forward_activation(self, m, reads):
        r = self.batch_rows(m)
        a = np.zeros(self.b)
        for s in range(self.S):
            a = a + self.X[r][:, self.block_slice(s)] @ reads[s]
        return a

    def stage_backward(self, m, activation, s, v_s):
        r = self.batch_rows(m)
        g = self.X[r][:, self.block_slice(s)].T @ self.ell_prime(activation, self.y[r]) / self.b + self.lam * v_s
        return g + self.reg_grad(v_s) if self.nu else g


# ---------------------------------------------------------------------------------------
# data (docs/theory.md §7: random least squares, synthetic logistic regression)


def make_least_squares(n, d, seed):
    """X i.i.d. N(0, 1), w_true ~ N(0, I), y = X w_true (f_* = 0)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w_true = rng.standard_normal(d)
    return X, X @ w_true, w_true


def make_logistic(n, d, seed):
    """X ~ N(0, I), w_true ~ N(0, I), y ~ Bernoulli(sigmoid(X w_true)) in {0, 1}."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w_true = rng.standard_normal(d)
    p = 1.0 / (1.0 + np.exp(-(X @ w_true)))
    y = (rng.random(n) < p).astype(np.float64)
    return X, y, w_true


# ---------------------------------------------------------------------------------------
# RPD (docs/theory.md §2) given its draws


def uniform_delays(K, S, delta, rng):
    """The RPD authors' rule: each block's delay i.i.d. uniform on {0, …, min(δ, k)}."""
    return np.array([[rng.integers(0, min(delta, k) + 1) for _ in range(S)] for k in range(K)], dtype=np.int64)


def run_rpd(obj, lr, delays, stages, batches, w0=None):
    """Returns the iterates w_0 … w_K (K + 1 rows) of RPD with the given draws."""
    K = len(stages)
    history = [np.zeros(obj.d) if w0 is None else np.array(w0, dtype=np.float64)]
    for k in range(K):
        z = np.empty(obj.d)
        for i in range(obj.S):
            j = k - int(delays[k][i])
            assert 0 <= j <= k
            z[obj.block_slice(i)] = history[j][obj.block_slice(i)]
        s, m = int(stages[k]), int(batches[k])
        w = history[k].copy()
        w[obj.block_slice(s)] -= lr * obj.batch_block_grad(z, m, s)
        history.append(w)
    return np.array(history)


# ---------------------------------------------------------------------------------------
# the unit-slot scheduler


class Policy:
    """Which op a stage may run: admission limits, F/B preference, extra F waits."""

    def __init__(self, S, limit, prefer, f_wait=None, b_wait=None, b_order=None):
        self.S = S
        self.limit = limit    # limit[s]: F only while in-flight (F done − B done) < limit[s]
        self.prefer = prefer  # "alternate" (PipeDream's 1F1B), "backward" (B first), "forward"
        self.f_wait = f_wait  # f_wait(s, mb, slot_of) -> bool: extra condition for F(s, mb)
        self.b_wait = b_wait  # b_wait(s, mb, slot_of) -> bool: extra condition for B(s, mb)
        self.b_order = b_order or (lambda s, i: i)  # the micro-batch of stage s's i-th B


def slot_schedule(S, num_mb, policy):
    """Plays the slots. Returns the ops in serial order: (slot, stage, kind 'F'|'B', mb)."""
    slot_of = {}  # (kind, stage, mb) -> slot

    def done(key, t):
        return key in slot_of and slot_of[key] < t

    nf, nb = [0] * S, [0] * S
    last = [None] * S
    ops = []
    t = 0
    while len(ops) < 2 * S * num_mb:
        assert t < 10 * S * num_mb + 10 * S, "the schedule deadlocked"
        chosen = []
        for s in range(S):
            f_ok = (nf[s] < num_mb and nf[s] - nb[s] < policy.limit[s]
                    and (s == 0 or done(("F", s - 1, nf[s]), t))
                    and (policy.f_wait is None or policy.f_wait(s, nf[s], slot_of, t)))
            bmb = policy.b_order(s, nb[s])
            b_ok = (nb[s] < nf[s] and done(("F", s, bmb), t)
                    and (s == S - 1 or done(("B", s + 1, bmb), t))
                    and (policy.b_wait is None or policy.b_wait(s, bmb, slot_of, t)))
            if not (f_ok or b_ok):
                continue
            if f_ok and b_ok:
                if policy.prefer == "backward":
                    kind = "B"
                elif policy.prefer == "forward":
                    kind = "F"
                else:  # PipeDream: B until the first B, then the other op than the last one
                    kind = "B" if nb[s] == 0 or last[s] == "F" else "F"
            else:
                kind = "F" if f_ok else "B"
            chosen.append((s, kind))
        for s, kind in chosen:
            mb = nf[s] if kind == "F" else policy.b_order(s, nb[s])
            slot_of[(kind, s, mb)] = t
            ops.append((t, s, kind, mb))
            if kind == "F":
                nf[s] += 1
            else:
                nb[s] += 1
            last[s] = kind
        t += 1
    return ops


def pipedream_policy(S):
    return Policy(S, [S] + [10**9] * (S - 1), "alternate")


def bounded_async_policy(S):
    """PACI's (and 2BW's) asynchronous 1F1B: stage s holds < S − s in flight, B first."""
    return Policy(S, [S - s for s in range(S)], "backward")


def flush_policy(S, m, kind):
    """GPipe ("gpipe") or 1F1B-flush ("1f1b") over groups of m micro-batches."""

    def f_wait(s, mb, slot_of, t):
        g = mb // m
        # the flush: every B of the previous group has finished, on every stage
        return all(("B", j, p) in slot_of and slot_of[("B", j, p)] < t
                   for j in range(S) for p in range((g - 1) * m, g * m) if g > 0)

    def b_wait(s, mb, slot_of, t):
        if kind != "gpipe":
            return True
        last_f = (mb // m) * m + m - 1  # GPipe: all of the group's F's on this stage first
        return ("F", s, last_f) in slot_of and slot_of[("F", s, last_f)] < t

    def reverse_in_group(s, i):  # GPipe: the group's B's in reverse micro-batch order
        g, j = divmod(i, m)
        return g * m + (m - 1 - j)

    if kind == "gpipe":
        return Policy(S, [10**9] * S, "forward", f_wait, b_wait, reverse_in_group)
    return Policy(S, [S - s for s in range(S)], "backward", f_wait, b_wait)


def localsgd_policy(S, R, H):
    round_len = R * H

    def f_wait(s, mb, slot_of, t):
        # the replica's previous B on this stage is done
        if mb - R >= 0 and not (("B", s, mb - R) in slot_of and slot_of[("B", s, mb - R)] < t):
            return False
        # a round's forwards wait for the previous round's last micro-batch's B on stage 0
        q = mb // round_len
        if q > 0:
            key = ("B", 0, q * round_len - 1)
            if not (key in slot_of and slot_of[key] < t):
                return False
        return True

    return Policy(S, [10**9] * S, "alternate", f_wait)


def pipedream_delays(ops, S):
    """§4's delay convention on a serial op list: for the k-th update (stage a, mb), block j's
    delay is k − (number of updates before F(j, mb)). Returns a list of (stage, [delays])."""
    updates_before_f = {}
    k = 0
    for _, s, kind, mb in ops:
        if kind == "F":
            updates_before_f[(s, mb)] = k
        else:
            k += 1
    out, k = [], 0
    for _, s, kind, mb in ops:
        if kind == "B":
            out.append((s, [k - updates_before_f[(j, mb)] for j in range(S)]))
            k += 1
    return out


# ---------------------------------------------------------------------------------------
# executing a schedule


def run_schedule(obj, lr, ops, num_mb, accumulation=1, stash=True, w0=None):
    """One model; returns (iterates [K + 1, d], losses [K + 1], events [(stage, mb)])."""
    S = obj.S
    w = np.zeros(obj.d) if w0 is None else np.array(w0, dtype=np.float64)
    fwd = {}  # mb -> list of the blocks each stage's F read (copies)
    acc = [np.zeros(obj.ds) for _ in range(S)]
    count = [0] * S
    iterates, losses, events = [w.copy()], [obj.value(w)], []
    for _, s, kind, mb in ops:
        c = obj.block_slice(s)
        if kind == "F":
            fwd.setdefault(mb, [None] * S)[s] = w[c].copy()
            continue
        reads = fwd[mb]
        a = obj.forward_activation(mb % obj.M, reads)
        v = reads[s] if stash else w[c].copy()
        acc[s] = acc[s] + obj.stage_backward(mb % obj.M, a, s, v)
        count[s] += 1
        if count[s] == accumulation:
            w[c] = w[c] - lr * (acc[s] / accumulation)
            acc[s] = np.zeros(obj.ds)
            count[s] = 0
            iterates.append(w.copy())
            losses.append(obj.value(w))
            events.append((s, mb))
    return np.array(iterates), np.array(losses), events


def run_localsgd(obj, lr, ops, num_mb, R, H, w0=None):
    """R replicas; returns the replica-average iterates, their losses and the events."""
    S = obj.S
    start = np.zeros(obj.d) if w0 is None else np.array(w0, dtype=np.float64)
    reps = [start.copy() for _ in range(R)]
    round_len = R * H
    fwd = {}

    def average():
        return sum(reps) / R

    iterates, losses, events = [start.copy()], [obj.value(start)], []
    for _, s, kind, mb in ops:
        r, c = mb % R, obj.block_slice(s)
        if kind == "F":
            fwd.setdefault(mb, [None] * S)[s] = reps[r][c].copy()
            continue
        a = obj.forward_activation(mb % obj.M, fwd[mb])
        reps[r][c] = reps[r][c] - lr * obj.stage_backward(mb % obj.M, a, s, fwd[mb][s])
        w = average()
        iterates.append(w)
        losses.append(obj.value(w))
        events.append((s, mb))
        if (mb + 1) % round_len == 0 or mb == num_mb - 1:  # the round's last B on stage s
            mean = sum(rep[c] for rep in reps) / R
            for rep in reps:
                rep[c] = mean.copy()
    return np.array(iterates), np.array(losses), events


def schedule_for(method, S, num_mb, accumulation=1, replicas=1, local_steps=1):
    if method in ("pipedream", "pipedream-nostash"):
        return slot_schedule(S, num_mb, pipedream_policy(S))
    if method in ("paci", "2bw"):
        return slot_schedule(S, num_mb, bounded_async_policy(S))
    if method == "gpipe":
        return slot_schedule(S, num_mb, flush_policy(S, accumulation, "gpipe"))
    if method == "1f1b-flush":
        return slot_schedule(S, num_mb, flush_policy(S, accumulation, "1f1b"))
    if method == "localsgd":
        return slot_schedule(S, num_mb, localsgd_policy(S, replicas, local_steps))
    raise ValueError(method)


def run_method(obj, method, lr, num_mb, accumulation=1, replicas=1, local_steps=1):
    """Any schedule method by the harness's name; returns (iterates, losses, events)."""
    ops = schedule_for(method, obj.S, num_mb, accumulation, replicas, local_steps)
    if method == "localsgd":
        return run_localsgd(obj, lr, ops, num_mb, replicas, local_steps)
    stash = method in ("pipedream", "2bw", "gpipe", "1f1b-flush")  # flush: nothing to stash
    a = 1 if method in ("pipedream", "pipedream-nostash") else accumulation
    return run_schedule(obj, lr, ops, num_mb, accumulation=a, stash=stash)
