"""A .partial written by an earlier version of stale resumes with this one, and the finished run
equals an uninterrupted run of this binary bit for bit.

The fixtures in tests/resume/earlier/ are runs interrupted by a single SIGINT, written by the
binary of commit 0c74bbe: sgd and bcd (momentum, so that the update rule's state is in the
checkpoint) from the two loops they had before they shared optimizers/fresh_read.cpp, whose
checkpoint layouts it keeps (sgd: its one rule under "rule" and no stage stream; bcd: "stages" and
"rules"). Each fixture's config is the .toml beside it. A fixture is copied before it is resumed:
a resume replaces its .partial.
"""
import os
import shutil
import subprocess

import h5py
import numpy as np
import pytest
from conftest import binary_build, skip_unless_committed_bits

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EARLIER = os.path.join(ROOT, "tests", "resume", "earlier")


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("name", ["sgd_momentum", "bcd_momentum"])
def test_an_earlier_versions_partial_resumes_to_the_uninterrupted_run(stale_bin, tmp_path, name):
    # the fixtures' rows and checkpoints are bits of one build target and toolchain
    skip_unless_committed_bits(*binary_build(stale_bin), "the fixtures' rows and checkpoints")
    partial = tmp_path / f"{name}.h5.partial"
    shutil.copyfile(os.path.join(EARLIER, f"{name}_0c74bbe.h5.partial"), partial)
    with h5py.File(partial, "r") as f:
        assert f.attrs["status"] in (b"interrupted", "interrupted")
        k_cut = int(f["metrics/k"][-1])
    r = subprocess.run([stale_bin, "run", "--resume", str(partial), "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    resumed = tmp_path / f"{name}.h5"
    assert resumed.exists() and not partial.exists()
    straight = tmp_path / "straight.h5"
    r = subprocess.run([stale_bin, "run", os.path.join(EARLIER, f"{name}.toml"), "--out", str(straight), "--quiet"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with h5py.File(resumed, "r") as a, h5py.File(straight, "r") as b:
        k = a["metrics/k"][()]
        assert k[-1] > k_cut  # the run went on past its checkpoint
        # f − f_* ends near 1e-7 (sgd) and 1e-4 (bcd) at γ = 3e-6: every row carries the
        # iterate's and the velocity's bits, not a rounding floor
        for series in ("k", "loss", "subopt", "grad_norm_sq", "grad_norm_sq_mean", "batch_loss"):
            assert same_bits(a[f"metrics/{series}"][()], b[f"metrics/{series}"][()]), series
