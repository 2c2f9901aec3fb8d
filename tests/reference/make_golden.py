#!/usr/bin/env python3
"""Writes the golden trajectories of tests/reference/golden/ from the NumPy reference.

    python3 tests/reference/make_golden.py            # rewrites tests/reference/golden/
    python3 tests/reference/make_golden.py CASE ...   # only these cases (e.g. logistic_nonconvex)

The data (least squares and logistic regression, generated here) are saved in formats the
harness reads through objective.generator = "file": an .npz (X, y, w_true) and an HDF5 file
(/X, /y, /w_true). For S in {2, 4, 8} and each objective one HDF5 file holds, per method, the
loss f(w_k) and the iterate w_k at every block update k = 0..K, the stage and micro-batch of
every update, and the config overrides the harness runs it with; RPD's group also holds its
draws (delay table, stages, batches). tests/reference/test_golden.cpp runs every method
through the harness and requires 1e-12 relative agreement at every update.

Bump GOLDEN_VERSION whenever the reference, the cases or the file layout change; the C++ test
checks it.

The nonconvex cases (NONCONVEX: the same data and step sizes with objective.nonconvex_reg = ν)
hold the harness's smooth nonconvex regulariser to the same standard.
"""

import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as ref  # noqa: E402

GOLDEN_VERSION = 1

N, D, BATCH = 48, 16, 4        # M = 12 batches; d divisible by every S
STAGES = (2, 4, 8)
MICROBATCHES = 32              # a multiple of every accumulation and LocalSGD round below
OBJECTIVES = {
    # name: (harness objective.name, loss, λ, step size, data file)
    "least_squares": ("quadratic", "squared", 0.0, 0.05, "data_least_squares.npz"),
    "logistic": ("logistic", "logistic", 0.01, 0.2, "data_logistic.h5"),
}
DATA_SEED = {"least_squares": 11, "logistic": 12}
# the same data and step sizes with the smooth nonconvex regulariser ν Σ w²/(1 + w²)
# (objective.nonconvex_reg = ν): name: (the convex case it extends, ν)
NONCONVEX = {
    "least_squares_nonconvex": ("least_squares", 0.5),
    "logistic_nonconvex": ("logistic", 0.1),
}
RPD_UPDATES = 128


def methods(S):
    """(group name, harness method.name, accumulation, replicas, local steps)."""
    return [
        ("pipedream", "pipedream", 1, 0, 0),
        ("pipedream-nostash", "pipedream-nostash", 1, 0, 0),
        ("paci_a2", "paci", 2, 0, 0),
        ("2bw_m%d" % S, "2bw", S, 0, 0),
        ("gpipe_m4", "gpipe", 4, 0, 0),
        ("1f1b-flush_m4", "1f1b-flush", 4, 0, 0),
        ("localsgd_R%d_H2" % S, "localsgd", 1, S, 2),
    ]


def write_data(out_dir):
    paths = {}
    for name, (_, loss, _, _, file) in OBJECTIVES.items():
        gen = ref.make_least_squares if loss == "squared" else ref.make_logistic
        X, y, w_true = gen(N, D, DATA_SEED[name])
        path = os.path.join(out_dir, file)
        if file.endswith(".npz"):
            np.savez(path, X=X, y=y, w_true=w_true)
        else:
            with h5py.File(path, "w") as f:
                f["X"], f["y"], f["w_true"] = X, y, w_true
        paths[name] = (X, y)
    return paths


def read_data(out_dir):
    """The data files write_data wrote (the same arrays: NumPy's generators are exact)."""
    paths = {}
    for name, (_, _, _, _, file) in OBJECTIVES.items():
        path = os.path.join(out_dir, file)
        if file.endswith(".npz"):
            with np.load(path) as z:
                paths[name] = (z["X"], z["y"])
        else:
            with h5py.File(path, "r") as f:
                paths[name] = (f["X"][()], f["y"][()])
    return paths


def overrides(**kv):
    return "\n".join("%s=%s" % (k, v) for k, v in kv.items())


def write_case(out_dir, name, S, X, y, nonconvex=0.0, case=None):
    objective, loss, lam, lr, file = OBJECTIVES[name]
    obj = ref.LinearObjective(X, y, loss, lam, S, BATCH, nonconvex)
    path = os.path.join(out_dir, "%s_S%d.h5" % (case or name, S))
    groups = []
    with h5py.File(path, "w") as f:
        f.attrs["golden_version"] = GOLDEN_VERSION
        f.attrs["script"] = "tests/reference/make_golden.py"
        over = {"objective.name": objective, "objective.generator": "file", "objective.data": file,
                "objective.batch_size": BATCH, "objective.stages": S, "objective.l2": lam}
        if nonconvex:  # (the convex cases' files keep their attributes)
            over["objective.nonconvex_reg"] = nonconvex
        f.attrs["objective"] = overrides(**over)

        def group(gname, over, iterates, losses, stages, mbs):
            g = f.create_group(gname)
            g.attrs["overrides"] = over
            g.create_dataset("iterates", data=iterates)
            g.create_dataset("loss", data=losses)
            g.create_dataset("stage", data=np.asarray(stages, dtype=np.int64))
            g.create_dataset("microbatch", data=np.asarray(mbs, dtype=np.int64))
            groups.append(gname)
            return g

        # RPD with the authors' uniform delays, δ = S² − S/2 (PipeDream's worst delay)
        rng = np.random.default_rng(1000 + S)
        delta = S * S - S // 2
        delays = ref.uniform_delays(RPD_UPDATES, S, delta, rng)
        stages = rng.integers(0, S, RPD_UPDATES)
        batches = rng.integers(0, obj.M, RPD_UPDATES)
        it = ref.run_rpd(obj, lr, delays, stages, batches)
        g = group("rpd_uniform", overrides(**{"method.name": "rpd", "method.lr": lr, "method.updates": RPD_UPDATES}),
                  it, np.array([obj.value(w) for w in it]), stages, batches)
        g.create_dataset("delays", data=delays)
        g.create_dataset("batch", data=np.asarray(batches, dtype=np.int64))

        for gname, method, a, R, H in methods(S):
            it, losses, events = ref.run_method(obj, method, lr, MICROBATCHES, a, max(R, 1), max(H, 1))
            over = {"method.name": method, "method.lr": lr, "method.updates": len(events),
                    "method.microbatches": MICROBATCHES}
            if method in ("paci", "2bw", "gpipe", "1f1b-flush"):
                over["method.accumulation"] = a
            if method == "localsgd":
                over["method.replicas"], over["method.local_steps"] = R, H
            group(gname, overrides(**over), it, losses, [e[0] for e in events], [e[1] for e in events])
        f.attrs["methods"] = ",".join(groups)
    return path


def main():
    """Every case, or the cases named on the command line. NumPy's BLAS rounds the last bit of
    some products differently on different machines (≤ 4e-16 relative between the machine that
    wrote the convex cases and a later one): writing only new cases leaves the others' bits."""
    cases = sys.argv[1:] or list(OBJECTIVES) + list(NONCONVEX)
    unknown = [c for c in cases if c not in OBJECTIVES and c not in NONCONVEX]
    if unknown:
        sys.exit("unknown case(s) %s; choose from %s" % (unknown, list(OBJECTIVES) + list(NONCONVEX)))
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
    os.makedirs(out_dir, exist_ok=True)
    data = write_data(out_dir) if set(cases) & set(OBJECTIVES) else read_data(out_dir)
    for name, (X, y) in data.items():
        if name not in cases:
            continue
        for S in STAGES:
            path = write_case(out_dir, name, S, X, y)
            print("wrote", os.path.relpath(path))
    for case, (name, nu) in NONCONVEX.items():
        if case not in cases:
            continue
        X, y = data[name]
        for S in STAGES:
            path = write_case(out_dir, name, S, X, y, nu, case)
            print("wrote", os.path.relpath(path))
    total = sum(os.path.getsize(os.path.join(out_dir, p)) for p in os.listdir(out_dir))
    print("golden version %d, %d bytes in %s" % (GOLDEN_VERSION, total, os.path.relpath(out_dir)))


if __name__ == "__main__":
    main()
