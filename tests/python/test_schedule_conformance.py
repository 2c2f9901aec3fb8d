"""stale's flush schedules, op for op, against the per-rank programs PyTorch's pipelining
runtime executes (torch.distributed.pipelining, issue 50).

PyTorch's programs are taken from PyTorch itself, never rewritten here:
  - single-stage schedules (ScheduleGPipe, Schedule1F1B): their `_step_microbatches` runs
    against a recording stage (no process group; every send and receive is empty), so the
    order is the one the runtime executes, not the visualisation `pipeline_order` (which for
    Schedule1F1B is not what runs);
  - multi-stage schedules: constructed for real over stand-in stage objects, and their
    `pipeline_order` (the compute actions the runtime interleaves its communication with)
    read with the idle slots (None) dropped.
stale's programs come from the `stale schedule` CLI's schedule file (/schedule: ops in
device-program order). A stale op is (block, kind, micro-batch), kind F, B or W, and F& for
the F of an overlapped F&B pair (op_flag::Overlap). PyTorch's I (input gradient) is stale's B
of a split-backward schedule; its B (full backward) is stale's B in a schedule without a split
and B then W (same block and micro-batch, back to back) in one with a split (DualPipeV mixes
both); its OVERLAP_F_B(F, B) is F& followed by that backward.

Differences that are conventions are listed in CONVENTIONS with their reason: the test
applies the stated mapping and then requires equality, and also requires that the raw
programs do differ (a convention that no longer changes anything must be deleted).
Anything else fails. Skipped without torch.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from typing import Callable

import h5py
import pytest

pipelining = pytest.importorskip("torch.distributed.pipelining.schedules")
stage_module = pytest.importorskip("torch.distributed.pipelining.stage")

Program = list  # per device: a list of ops; an op is (block, kind, microbatch)

STAGES = (2, 4, 8)


def microbatch_grid(S: int) -> tuple[int, ...]:
    return (S, S + 1, 2 * S, 3 * S, 3 * S + 1)


# ---------------------------------------------------------------------------------------------
# PyTorch's side


class _RecordingStage:
    """Stands in for a PipelineStage under a single-stage schedule's runtime: records each
    forward_one_chunk / backward_one_chunk; communication is empty."""

    def __init__(self, rank: int, stages: int):
        self.stage_index, self.num_stages = rank, stages
        self.is_first, self.is_last = rank == 0, rank == stages - 1
        self.submod = object()
        self.ops: list = []

    def __getattr__(self, name):
        if name.startswith("get_"):  # get_fwd_recv_ops, get_bwd_send_ops, ...: nothing to send
            return lambda *a, **k: []
        return lambda *a, **k: None  # perform_reduce_grad, waits, releases

    def forward_one_chunk(self, mb, *args, **kwargs):
        self.ops.append((self.stage_index, "F", mb))

    def backward_one_chunk(self, mb, **kwargs):
        self.ops.append((self.stage_index, "B", mb))


def _single_stage_programs(cls, S: int, M: int, monkeypatch) -> list[Program]:
    monkeypatch.setattr(pipelining, "_wait_and_release_fwd_send", lambda *a, **k: None)
    programs = []
    for rank in range(S):
        stage = _RecordingStage(rank, S)
        sched = cls.__new__(cls)  # the constructor wants a real stage; the runtime needs only these
        sched._stage, sched._num_stages, sched._n_microbatches = stage, S, M
        sched._finalize_gradients, sched.scale_grads = True, True
        sched._check_inputs = lambda a, k, t, l: ([None] * M, [{}] * M)
        for hook in ("_initialize_stage", "_maybe_compute_loss", "_maybe_get_loss", "_update_losses"):
            setattr(sched, hook, lambda *a, **k: None)
        sched._step_microbatches(None, None, None, None)
        programs.append(stage.ops)
    return programs


class _StandInStage(stage_module._PipelineStageBase):
    """Only what a multi-stage schedule's constructor reads of its stages."""

    def __init__(self, index: int, stages: int, blocks: int):
        self.stage_index, self.group_size, self.group_rank, self.num_stages = index, stages, 0, blocks
        self.submod, self.stage_index_to_group_rank = None, {}

    def _create_grad_recv_info(self, *args, **kwargs):
        return ()

    def _prepare_forward_infra(self, *args, **kwargs):
        return None

    def _prepare_backward_infra(self, *args, **kwargs):
        return None


def _multi_stage_programs(cls, S: int, M: int, v: int, split: bool) -> list[Program] | None:
    """None when PyTorch refuses (S, M, v) (a ValueError of the constructor)."""
    try:
        sched = cls([_StandInStage(c * S, S, S * v) for c in range(v)], M)
    except ValueError:
        return None
    programs = []
    for rank in range(S):
        ops = []
        for a in sched.pipeline_order[rank]:
            if a is None:
                continue
            if a.computation_type.value == "OVERLAP_F_B":  # an F&B pair: its F marked, then its backward
                f, b = a.sub_actions
                ops.append((f.stage_index, "F&", f.microbatch_index))
                ops += _compute_ops(b, split)
            else:
                ops += _compute_ops(a, split)
        programs.append(ops)
    return programs


def _compute_ops(a, split: bool) -> list:
    """A PyTorch compute action in stale's terms: I is B; a full backward B is B in a schedule
    without a split and B then W (the same micro-batch, at once) in one with a split."""
    ct, op = a.computation_type.value, (a.stage_index, None, a.microbatch_index)
    if ct == "F":
        return [(op[0], "F", op[2])]
    if ct == "I":
        return [(op[0], "B", op[2])]
    if ct == "W":
        return [(op[0], "W", op[2])]
    if ct == "B":
        return [(op[0], "B", op[2])] + ([(op[0], "W", op[2])] if split else [])
    return []  # communication, unshard, reduce: not compute


# ---------------------------------------------------------------------------------------------
# stale's side


def stale_programs(stale_bin: str, tmp_path, name: str, S: int, M: int, v: int = 0) -> list[Program] | None:
    """One mini-batch of M (accumulation = M, PyTorch's step); None when stale refuses."""
    out = tmp_path / f"{name}_{S}_{M}_{v}.h5"
    cmd = [stale_bin, "schedule", name, "-S", str(S), "-M", str(M), "-a", str(M), "-o", str(out)]
    if v:
        cmd += ["-v", str(v)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        assert "schedule " + name in r.stderr, r.stderr  # a refusal names the schedule, not a crash
        return None
    with h5py.File(out, "r") as f:
        g = f["/schedule"]
        stage, block, kind, mb, flags = (g[k][()] for k in ("stage", "block", "kind", "microbatch", "flags"))
    programs: list[Program] = [[] for _ in range(S)]
    for d, b, k, m, fl in zip(stage, block, kind, mb, flags):
        letter = "FBW"[int(k)] + ("&" if int(fl) & 4 else "")  # 4: op_flag::Overlap, an F&B pair's F
        programs[int(d)].append((int(b), letter, int(m)))
    return programs


# ---------------------------------------------------------------------------------------------
# what is compared


@dataclass
class Convention:
    reason: str
    to_pytorch: Callable[[list[Program]], list[Program]]  # stale's programs in PyTorch's convention


def _gpipe_oldest_backward_first(programs: list[Program]) -> list[Program]:
    # one mini-batch: all F then all B; PyTorch takes the B oldest first
    out = []
    for ops in programs:
        f = [op for op in ops if op[1] == "F"]
        b = sorted((op for op in ops if op[1] == "B"), key=lambda op: op[2])
        out.append(f + b)
    return out


@dataclass
class Pair:
    stale: str
    torch_class: str
    chunks: tuple[int, ...] = (0,)  # stale's -v (0: the schedule's own)
    single_stage: bool = False
    convention: Convention | None = None
    torch_chunks: Callable[[int], int] = field(default=lambda v: max(1, v))  # PyTorch's stages per rank
    split: bool = False  # stale splits the backward (B, W)
    # a stated convention: why stale runs micro-batch counts PyTorch refuses ("" : it must not)
    accepts_more: str = ""


PAIRS = [
    Pair("1f1b-flush", "Schedule1F1B", single_stage=True),
    Pair("gpipe", "ScheduleGPipe", single_stage=True, convention=Convention(
        "stale's GPipe runs a mini-batch's backward passes newest first (torchgpipe's order: autograd "
        "unwinds the last micro-batch first; the freshest activation is freed first); PyTorch's "
        "ScheduleGPipe takes them oldest first. Same makespan with equal costs, same peak activation count; "
        "only which activation is freed first differs (docs/design.md, src/pipeline/schedules_sync.cpp)",
        _gpipe_oldest_backward_first)),
    # ZB-H1 is PyTorch's interleaved zero bubble with one stage per rank
    Pair("zb-h1", "ScheduleInterleavedZeroBubble", split=True, accepts_more=(
        "PyTorch's interleaved zero bubble cuts M into max(1, M // S) rounds and refuses an M that is not a whole "
        "number of them (S = 2: M = 7); with one stage per rank the rounds change nothing in its program, and "
        "stale's zb-h1, written per device as 1F1B plus deferred W, takes any M")),
    Pair("interleaved", "ScheduleInterleaved1F1B", chunks=(2, 3)),
    Pair("interleaved-zb", "ScheduleInterleavedZeroBubble", chunks=(2, 3), split=True),
    Pair("looped-bfs", "ScheduleLoopedBFS", chunks=(2, 3)),
    # V placement: PyTorch's stage 2S - 1 - r on rank r is stale's block 2S - 1 - r on device r
    Pair("zb-v", "ScheduleZBVZeroBubble", torch_chunks=lambda v: 2, split=True),
    Pair("dualpipev", "ScheduleDualPipeV", torch_chunks=lambda v: 2, split=True),
]


def _torch_programs(pair: Pair, S: int, M: int, v: int, monkeypatch):
    cls = getattr(pipelining, pair.torch_class)
    if pair.single_stage:
        return _single_stage_programs(cls, S, M, monkeypatch)
    return _multi_stage_programs(cls, S, M, pair.torch_chunks(v), pair.split)


def _first_difference(a: list[Program], b: list[Program]) -> str:
    for d, (x, y) in enumerate(zip(a, b)):
        for i, (p, q) in enumerate(zip(x, y)):
            if p != q:
                return f"device {d} op {i}: stale {p}, PyTorch {q}"
        if len(x) != len(y):
            return f"device {d}: stale has {len(x)} ops, PyTorch {len(y)}"
    return "different device counts" if len(a) != len(b) else ""


def compare(stale: list[Program] | None, torch_: list[Program] | None, convention: Convention | None,
            accepts_more: str = "") -> str:
    """'' when the programs agree (both refusing counts as agreeing, and stale running what PyTorch
    refuses where `accepts_more` says why), else what differs."""
    if stale is None or torch_ is None:
        if stale is None and torch_ is None:
            return ""
        if stale is None:
            return "stale refuses"
        return "" if accepts_more else "PyTorch refuses"
    if convention is not None:
        if stale == torch_:
            return "the convention changes nothing any more: delete it"
        stale = convention.to_pytorch(stale)
    return _first_difference(stale, torch_)


CASES = [(p, S, M, v) for p in PAIRS for S in STAGES for M in microbatch_grid(S) for v in p.chunks]


@pytest.mark.parametrize("pair,S,M,v", CASES, ids=[f"{p.stale}-S{S}-M{M}-v{v}" for p, S, M, v in CASES])
def test_stale_runs_the_program_pytorch_runs(stale_bin, tmp_path, monkeypatch, pair, S, M, v):
    got = stale_programs(stale_bin, tmp_path, pair.stale, S, M, v)
    want = _torch_programs(pair, S, M, v, monkeypatch)
    assert compare(got, want, pair.convention, pair.accepts_more) == ""


def test_the_comparison_fails_on_a_perturbed_program(stale_bin, tmp_path, monkeypatch):
    """Positive controls: each kind of mistake a generator could make is caught."""
    S, M = 4, 8
    pair = PAIRS[0]
    want = _torch_programs(pair, S, M, 0, monkeypatch)
    got = stale_programs(stale_bin, tmp_path, pair.stale, S, M)
    assert compare(got, want, None) == ""
    swapped = [list(p) for p in got]
    swapped[2][3], swapped[2][4] = swapped[2][4], swapped[2][3]  # two ops of one device swapped
    assert "device 2 op 3" in compare(swapped, want, None)
    renumbered = [list(p) for p in got]
    b, k, m = renumbered[1][0]
    renumbered[1][0] = (b, k, m + 1)  # a wrong micro-batch
    assert "device 1 op 0" in compare(renumbered, want, None)
    dropped = [list(p) for p in got]
    dropped[3].pop()  # a missing op
    assert "device 3" in compare(dropped, want, None)
    assert compare(None, want, None) == "stale refuses"
    assert compare(got, None, None) == "PyTorch refuses"  # accepting more is a failure unless stated
    assert compare(got, None, None, "a reason") == ""
    # DualPipeV: an F&B pair written as a plain F fails; ZB-V: chunk 1 placed looped (block S + d) fails
    dp = next(p for p in PAIRS if p.stale == "dualpipev")
    d_want = _torch_programs(dp, S, M, 0, monkeypatch)
    d_got = stale_programs(stale_bin, tmp_path, "dualpipev", S, M)
    assert compare(d_got, d_want, None) == ""
    plain = [[(b, k.rstrip("&"), m) for b, k, m in p] for p in d_got]
    assert "F&" in compare(plain, d_want, None)
    zv = next(p for p in PAIRS if p.stale == "zb-v")
    z_want = _torch_programs(zv, S, M, 0, monkeypatch)
    z_got = stale_programs(stale_bin, tmp_path, "zb-v", S, M)
    assert compare(z_got, z_want, None) == ""
    looped = [[(S + d if b >= S else b, k, m) for b, k, m in p] for d, p in enumerate(z_got)]
    assert compare(looped, z_want, None) != ""
    # a convention must still be needed, and its mapping must be what makes the programs agree
    gp = next(p for p in PAIRS if p.stale == "gpipe")
    g_want = _torch_programs(gp, S, M, 0, monkeypatch)
    g_got = stale_programs(stale_bin, tmp_path, "gpipe", S, M)
    assert compare(g_got, g_want, None) != ""
    assert compare(g_got, g_want, gp.convention) == ""
    assert compare(g_want, g_want, gp.convention) == "the convention changes nothing any more: delete it"
