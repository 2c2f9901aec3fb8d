"""Checks of the NumPy reference itself against the facts docs/theory.md states, so that the golden
trajectories rest on a reference that is right on its own terms, not on agreement with the
harness. Run with pytest, or without it: `python3 tests/reference/test_reference.py`.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as ref  # noqa: E402


def small_objective(loss="logistic", S=4, lam=0.01, nonconvex=0.0):
    X, y, _ = (ref.make_logistic if loss == "logistic" else ref.make_least_squares)(24, 8, 5)
    return ref.LinearObjective(X, y, "logistic" if loss == "logistic" else "squared", lam, S, 4, nonconvex)


def steady(delays):
    K = len(delays)
    return delays[K // 3: 2 * K // 3]


def test_pipedream_worst_delay_is_S2_minus_S_over_2_and_the_mean_at_S8_is_31_5():
    # docs/theory.md §4: exactly S² − S/2 for even S, attained when stage 1 reads its own block
    for S in (2, 4, 6, 8):
        ops = ref.slot_schedule(S, 6 * S, ref.pipedream_policy(S))
        st = steady(ref.pipedream_delays(ops, S))
        assert max(max(d) for _, d in st) == S * S - S // 2
        assert max(d[0] for s, d in st if s == 0) == S * S - S // 2
    ops = ref.slot_schedule(8, 48, ref.pipedream_policy(8))
    st = steady(ref.pipedream_delays(ops, 8))
    assert sum(sum(d) for _, d in st) / (8 * len(st)) == 31.5


def test_pipedream_stages_hold_8_8_8_8_7_5_3_1_at_S8():
    ops = ref.slot_schedule(8, 64, ref.pipedream_policy(8))
    inflight, peak = [0] * 8, [0] * 8
    for _, s, kind, _ in ops:
        inflight[s] += 1 if kind == "F" else -1
        peak[s] = max(peak[s], inflight[s])
    assert peak == [8, 8, 8, 8, 7, 5, 3, 1]


def test_paci_crosses_at_most_ceil_S_minus_1_minus_s_over_a_updates_and_attains_it():
    for S in (2, 4, 8):
        for a in (1, 2, 3, 8):
            ops = ref.slot_schedule(S, 2 * S * a + 4 * S, ref.bounded_async_policy(S))
            steps, count, at_f, worst = [0] * S, [0] * S, {}, [0] * S
            for _, s, kind, mb in ops:
                if kind == "F":
                    at_f[(s, mb)] = steps[s]
                    continue
                worst[s] = max(worst[s], steps[s] - at_f[(s, mb)])
                count[s] += 1
                if count[s] == a:
                    count[s], steps[s] = 0, steps[s] + 1
            assert worst == [-(-(S - 1 - s) // a) for s in range(S)]


def test_flush_schedules_take_2_m_plus_S_minus_1_slots_per_group():
    # bubble (S − 1)/(m + S − 1): each group of m micro-batches takes 2(m + S − 1) slots
    for S in (2, 4, 8):
        for kind in ("gpipe", "1f1b"):
            ops = ref.slot_schedule(S, 3 * 4, ref.flush_policy(S, 4, kind))
            assert max(t for t, *_ in ops) + 1 == 3 * 2 * (4 + S - 1)


def test_localsgd_rounds_drain():
    S, R, H = 4, 4, 2
    ops = ref.slot_schedule(S, 3 * R * H, ref.localsgd_policy(S, R, H))
    for q in range(1, 3):
        first = min(t for t, _, _, mb in ops if mb // (R * H) == q)
        last = max(t for t, _, _, mb in ops if mb // (R * H) == q - 1)
        assert first > last


def test_the_stage_wise_backward_is_the_block_gradient_and_matches_finite_differences():
    for obj in (small_objective(), small_objective("logistic", nonconvex=0.3),
                small_objective("squared", lam=0.0, nonconvex=0.7)):
        check_stage_wise_backward(obj)


def check_stage_wise_backward(obj):
    rng = np.random.default_rng(0)
    w = rng.standard_normal(obj.d)
    blocks = [w[obj.block_slice(s)] for s in range(obj.S)]
    for m in range(obj.M):
        a = obj.forward_activation(m, blocks)
        for s in range(obj.S):
            g = obj.stage_backward(m, a, s, blocks[s])
            assert np.allclose(g, obj.batch_block_grad(w, m, s), rtol=1e-13, atol=1e-15)
            for j in range(obj.ds):
                e = np.zeros(obj.d)
                e[obj.block_slice(s).start + j] = 1e-6
                fd = (obj.batch_value(w + e, m) - obj.batch_value(w - e, m)) / 2e-6
                assert abs(fd - g[j]) <= 1e-7 * max(1.0, abs(g[j]))


def test_rpd_with_zero_delay_is_block_coordinate_sgd():
    obj = small_objective()
    rng = np.random.default_rng(1)
    K = 40
    stages, batches = rng.integers(0, obj.S, K), rng.integers(0, obj.M, K)
    it = ref.run_rpd(obj, 0.1, np.zeros((K, obj.S), dtype=np.int64), stages, batches)
    w = np.zeros(obj.d)
    for k in range(K):
        c = obj.block_slice(stages[k])
        w[c] -= 0.1 * obj.batch_block_grad(w, batches[k], stages[k])
        assert np.array_equal(w, it[k + 1])


def minibatch_sgd(obj, lr, steps, m):
    w, mb, out = np.zeros(obj.d), 0, [np.zeros(obj.d)]
    for _ in range(steps):
        g = sum(np.concatenate([obj.batch_block_grad(w, (mb + i) % obj.M, s) for s in range(obj.S)])
                for i in range(m)) / m
        w = w - lr * g
        mb += m
        out.append(w)
    return out


def test_gpipe_and_1f1b_flush_are_minibatch_sgd_on_the_accumulated_gradient():
    obj = small_objective()
    want = minibatch_sgd(obj, 0.1, 5, 4)
    for method in ("gpipe", "1f1b-flush"):
        it, _, events = ref.run_method(obj, method, 0.1, 20, accumulation=4)
        assert [s for s, _ in events[: obj.S]] == list(range(obj.S - 1, -1, -1))
        for step in range(1, 6):
            assert np.allclose(it[step * obj.S], want[step], rtol=1e-12, atol=0)


def test_localsgd_with_one_local_step_is_minibatch_sgd_and_with_one_replica_is_sgd():
    obj = small_objective()
    it, _, _ = ref.run_method(obj, "localsgd", 0.1, 16, replicas=4, local_steps=1)
    want = minibatch_sgd(obj, 0.1, 4, 4)
    for q in range(1, 5):
        assert np.allclose(it[q * 4 * obj.S], want[q], rtol=1e-12, atol=0)
    it, _, _ = ref.run_method(obj, "localsgd", 0.1, 6, replicas=1, local_steps=3)
    assert np.allclose(it[-1], minibatch_sgd(obj, 0.1, 6, 1)[-1], rtol=1e-12, atol=0)


def test_stashing_matters_only_through_the_regulariser():
    ls = small_objective("squared", lam=0.0)
    a = ref.run_method(ls, "pipedream", 0.05, 16)[0]
    b = ref.run_method(ls, "pipedream-nostash", 0.05, 16)[0]
    assert np.array_equal(a, b)  # the backward of a linear model reads no weight but λ w
    lg = small_objective("logistic", lam=0.01)
    a = ref.run_method(lg, "pipedream", 0.05, 16)[0]
    b = ref.run_method(lg, "pipedream-nostash", 0.05, 16)[0]
    assert not np.array_equal(a, b)


if __name__ == "__main__":
    tests = [v for k, v in sorted(globals().items()) if k.startswith("test_")]
    for t in tests:
        t()
        print("ok", t.__name__)
    print("%d reference checks passed" % len(tests))
