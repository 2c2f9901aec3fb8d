"""The char-level GPT written in PyTorch (python/stale/torch_charlm.py, stale.torch.charlm_stages)
against the C++ twin (objectives/charlm/charlm_cpu.*): the same data, stage layout and initial weights,
run by stale's pipedream and paci for 240 updates. Batch losses and iterates agree to 1e-12 in
float64 (measured: 4e-16) and to RTOL_FLOAT32 in float32 (measured: 1.4e-7 on the batch losses,
6.7e-8 on the iterates). Skipped without torch or without tinyshakespeare.txt."""
from __future__ import annotations

import numpy as np
import pytest

stale = pytest.importorskip("stale", reason="the Python package is not installed (pip install .)")
torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'stale[torch]')")
import stale.torch as st  # noqa: E402

torch.set_num_threads(1)  # tiny ops (test_stage_model_torch.py says why)

CHARLM = {"seed": 1, "objective.name": "charlm", "objective.embedding": 16, "objective.heads": 2,
          "objective.context": 8, "objective.batch_size": 4, "objective.stages": 4, "objective.samples": 64,
          "backend": "cpu"}
RUN = {"seed": 1, "method.lr": 0.1, "method.updates": 240, "log.every": 24, "log.exact_mean": False,
       "log.progress": False}
RTOL_FLOAT64 = 1e-12
# float32 on both sides, summed in different orders (Eigen's GEMMs against MKL's): 240 updates
# keep the runs this close, with a 70-fold margin over what was measured
RTOL_FLOAT32 = 1e-5


def torch_charlm(dtype, device="cpu"):
    try:
        return st.charlm_stages(CHARLM, dtype=dtype, device=device)
    except stale.ConfigError as e:
        if "tinyshakespeare" in str(e):
            pytest.skip("no tinyshakespeare.txt (scripts/download_data.sh)")
        raise


CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


# on a CUDA device the model's tensors live there (stale.torch moves each op's weights and
# activations across): cuBLAS sums in its own order, the tolerances are the CPU's
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=CUDA)])
@pytest.mark.parametrize("method", ["pipedream", "paci"])
@pytest.mark.parametrize("precision,rtol", [("float64", RTOL_FLOAT64), ("float32", RTOL_FLOAT32)])
def test_torch_charlm_follows_the_cpu_twin(method, precision, rtol, device):
    model = torch_charlm(getattr(torch, precision), device)
    mine = stale.run({**RUN, "method.name": method}, model=model)
    builtin = stale.run({**CHARLM, **RUN, "method.name": method, "precision": precision})
    assert mine.status == builtin.status == "ok" and mine.summary["k"] == builtin.summary["k"] == 240
    # the built-in "loss" series means over 8 fixed batches, the Python model's over all of them
    # (stale.torch.charlm_stages): what both compute alike is each update's batch loss and w
    np.testing.assert_allclose(mine.series("batch_loss"), builtin.series("batch_loss"), rtol=rtol, equal_nan=True)
    d = np.linalg.norm(mine.iterates - builtin.iterates, axis=1)
    print(f"{device} {precision} {method}: batch losses max rel {np.nanmax(np.abs(mine.series('batch_loss') / builtin.series('batch_loss') - 1)):.2e}, "
          f"iterates max rel {np.max(d / np.linalg.norm(builtin.iterates, axis=1)):.2e}")
    assert np.all(d <= rtol * np.linalg.norm(builtin.iterates, axis=1)), d.max()
    np.testing.assert_array_equal(mine.iterates_k, builtin.iterates_k)
    loss = builtin.series("batch_loss")
    assert loss[-1] < loss[1] - 0.5  # it learned (4.16 → 3.2 nats)
