"""The Python package `stale` (pip install .; python/): its results equal the CLI's files,
number for number, and bad input is a stale.ConfigError with the CLI's one-line message.

Skipped when the package is not installed (scripts/test.sh installs it); the comparisons with
the CLI also need the binary (STALE_BIN or build/stale)."""
from __future__ import annotations

import os
import re
import subprocess
import threading

import h5py
import numpy as np
import pytest

from conftest import ROOT, skip_unless_committed_bits

stale = pytest.importorskip("stale", reason="the Python package is not installed (pip install .)")

EXP = os.path.join(ROOT, "experiments")
QUICK = os.path.join(EXP, "quickstart.toml")

# every /metrics series but the wall clock
SERIES = ["k", "time", "loss", "subopt", "grad_norm_sq", "grad_norm_sq_mean", "stale_dist", "stage", "batch", "bound",
          "bound_opt", "bound_stoch", "bound_stale", "G", "batch_loss", "val_loss"]


def cli(stale_bin, *args):
    r = subprocess.run([stale_bin, *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def assert_same_run(a, b):
    """Two Runs hold the same numbers, bit for bit (NaN where the other has NaN), but for the wall times."""
    assert a.status == b.status
    assert a.message == b.message
    for name in SERIES:
        x, y = a.series(name), b.series(name)
        assert x.dtype.kind == y.dtype.kind, name
        np.testing.assert_array_equal(x, y, err_msg=name, strict=True)
    np.testing.assert_array_equal(a.iterates, b.iterates, strict=True)
    np.testing.assert_array_equal(a.iterates_k, b.iterates_k)
    if a.delays is None or b.delays is None:
        assert a.delays is None and b.delays is None
    else:
        np.testing.assert_array_equal(a.delays, b.delays)
    if a.delay_summary is not None or b.delay_summary is not None:
        for key in ("max", "mean", "updates", "table_kept"):
            np.testing.assert_array_equal(a.delay_summary[key], b.delay_summary[key], err_msg=key)
    # one /theory record in memory and in the file (src/io/theory_record.hpp; issue 51: the two
    # had different keys), equal key for key; the estimate's wall seconds are a timing
    assert sorted(a.theory) == sorted(b.theory)  # HDF5 lists attributes by name
    for key in a.theory:
        if key != "L_estimate_seconds":
            np.testing.assert_equal(a.theory[key], b.theory[key], err_msg=key)  # f_* is NaN for the transformer
    for key in ("name", "n", "d", "S", "L", "mu", "f_star", "batches", "description"):
        np.testing.assert_equal(a.objective[key], b.objective[key], err_msg=key)
    np.testing.assert_array_equal(a.objective["block_sizes"], b.objective["block_sizes"])
    assert a.config == b.config
    if a.schedule is not None or b.schedule is not None:
        for key in ("makespan", "bubble_fraction", "bubble", "busy", "peak_inflight", "peak_versions",
                    "max_crossed_measured"):
            np.testing.assert_array_equal(a.schedule[key], b.schedule[key], err_msg=key)


# a stale-read method, a schedule method, a fresh-read method and LocalSGD on logistic data:
# every observer path (delays, /schedule, full-vector steps, averaging) appears once
CASES = {
    "rpd": (QUICK, ["method.updates=400", "log.every=7"]),
    "pipedream": (os.path.join(EXP, "e2_nesterov.toml"), ["objective.stages=4", "method.time_budget=120"]),
    "sgd": (QUICK, ["method.name=sgd", "delay.name=zero", "delay.max=0", "method.updates=240", "log.every=16",
                    "log.iterates_every=48"]),
    "localsgd": (os.path.join(EXP, "e3_logistic.toml"), ["method.name=localsgd", "method.updates=256",
                                                           "method.local_steps=2", "log.every=8"]),
}


def overrides_dict(assignments):
    out = {}
    for a in assignments:
        k, v = a.split("=", 1)
        try:
            out[k] = int(v)
        except ValueError:
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_run_in_memory_equals_the_cli_run_file(stale_bin, tmp_path, case):
    config, over = CASES[case]
    out = tmp_path / f"{case}.h5"
    cli(stale_bin, "run", config, *over, "--out", out, "-q")
    mem = stale.run(config, **overrides_dict(over))
    assert mem.path is None
    assert_same_run(mem, stale.load(out))
    # and through out=: the file stale.run writes is the CLI's
    again = stale.run(config, out=tmp_path / f"{case}_py.h5", **overrides_dict(over))
    assert again.path == str(tmp_path / f"{case}_py.h5")
    assert_same_run(again, mem)


def test_a_bound_with_an_estimated_L_is_labelled_in_memory_as_in_the_file(stale_bin, tmp_path):
    """The char-level GPT has no certified L: the run's bound uses the estimate along the run, and
    the Run says so (theory, summary, repr) whether it was kept in memory or read from the file."""
    config = os.path.join(EXP, "audit_charlm_base.toml")
    over = ["method.updates=60", "log.every=10", "log.L_power_steps=1"]
    out = tmp_path / "charlm.h5"
    r = subprocess.run([stale_bin, "run", config, *over, "--out", out, "-q"], capture_output=True, text=True)
    if r.returncode != 0 and "tinyshakespeare.txt" in r.stderr:
        pytest.skip("no tinyshakespeare.txt")
    assert r.returncode == 0, r.stderr
    mem = stale.run(config, **overrides_dict(over))
    for run in (mem, stale.load(out)):
        assert run.bound_uses_estimated_L and run.theory["L_source"].startswith("estimated (secant")
        assert run.summary["estimated_L"] == run.theory["L"] == run.theory["L_estimate"]
        assert "(estimated L=" in repr(run)
    assert_same_run(mem, stale.load(out))
    quick = stale.run(QUICK, method__updates=50)
    assert not quick.bound_uses_estimated_L and quick.summary["estimated_L"] is None
    assert quick.theory["L_source"] == "certified" and "estimated" not in repr(quick)


def test_run_prints_the_summary_numbers_of_the_readme():
    skip_unless_committed_bits(stale.cpu_target, stale.toolchain, "the README's summary numbers")
    r = stale.run(QUICK)
    s = r.summary
    assert (s["status"], s["k"]) == ("ok", 3200)
    # README: "status=ok k=3200 f-f*=4.364347e+00 mean|grad f|^2=7.629744e+01 bound=8.959797e+04"
    assert f"{s['subopt']:.6e} {s['grad_norm_sq_mean']:.6e} {s['bound']:.6e}" == "4.364347e+00 7.629744e+01 8.959797e+04"
    assert list(r.metrics.columns[:4]) == ["k", "time", "loss", "subopt"]
    # log.iterates_every = 32 (the quickstart file's size): k = 0, 32, …, 3200
    assert r.iterates.shape == (101, 512) and r.delays.shape == (3200, 8)
    np.testing.assert_array_equal(r.iterates_k, np.arange(0, 3201, 32))
    np.testing.assert_array_equal(r.final_w, r.iterates[-1])


def test_dict_config_equals_the_toml_file():
    nested = {"seed": 0, "objective": {"name": "quadratic", "generator": "random", "dim": 512, "samples": 600,
                                       "batch_size": 10, "stages": 8},
              "method": {"name": "rpd", "lr": 0.015625, "updates": 300}, "delay": {"name": "uniform", "max": 60},
              "log": {"every": 1, "iterates_every": 32}}
    a = stale.run(nested)
    b = stale.run(QUICK, method__updates=300)
    c = stale.run(QUICK, **{"method.updates": 300})
    for other in (b, c):
        np.testing.assert_array_equal(a.series("subopt"), other.series("subopt"))
        np.testing.assert_array_equal(a.iterates, other.iterates)


def test_config_errors_raise_config_error_and_write_nothing(tmp_path):
    out = tmp_path / "bad.h5"
    with pytest.raises(stale.ConfigError, match=r"method\.lr") as e:
        stale.run(QUICK, out=out, **{"method.lr": -1.0})
    assert "\n" not in str(e.value) and isinstance(e.value, ValueError)
    with pytest.raises(stale.ConfigError, match="unknown config key 'method.lrr'"):
        stale.run(QUICK, method__lrr=0.1)
    with pytest.raises(stale.ConfigError, match="delay.max"):  # the unread-key rule
        stale.run(QUICK, **{"method.name": "sgd", "delay.name": "zero", "delay.max": 8})
    with pytest.raises(stale.ConfigError, match="no_such.toml"):
        stale.run(tmp_path / "no_such.toml")
    assert list(tmp_path.iterdir()) == []
    stale.run(QUICK, out=out, method__updates=50)
    with pytest.raises(stale.ConfigError, match="already there"):
        stale.run(QUICK, out=out, method__updates=50)
    assert stale.run(QUICK, out=out, force=True, method__updates=60).summary["k"] == 60


def test_switching_the_method_in_one_call(stale_bin, tmp_path):
    # the quickstart (rpd, uniform delays up to 60) as PipeDream: the delay model's key is left
    # over; None unsets it, drop_unread drops every such key, and both equal the CLI's ways
    with pytest.raises(stale.ConfigError, match=r"delay\.max.*reads no delay model.*~KEY.*--drop-unread"):
        stale.run(QUICK, method__name="pipedream", method__updates=64)
    a = stale.run(QUICK, method__name="pipedream", method__updates=64, delay__name=None, delay__max=None)
    b = stale.run(QUICK, method__name="pipedream", method__updates=64, drop_unread=True)
    assert_same_run(a, b)
    cli(stale_bin, "run", QUICK, "method.name=pipedream", "method.updates=64", "~delay.name", "~delay.max", "--quiet",
        "--out", tmp_path / "unset.h5")
    r = subprocess.run([stale_bin, "run", QUICK, "method.name=pipedream", "method.updates=64", "--drop-unread",
                        "--out", tmp_path / "dropped.h5"], capture_output=True, text=True)
    assert r.returncode == 0 and "--drop-unread: not read by this run, dropped: delay.name, delay.max" in r.stderr
    for f in ("unset.h5", "dropped.h5"):
        assert_same_run(a, stale.load(tmp_path / f))


def test_a_diverged_run_is_a_result():
    r = stale.run(QUICK, **{"method.lr": 0.5})
    assert r.status == "diverged" and "exceeded log.divergence" in r.message
    assert r.summary["k"] < 3200


def test_the_interpreter_lock_is_released_during_a_run():
    """A Python thread runs while stale.run computes: it sees the C++ call in progress (only
    possible if the call released the lock) and keeps counting meanwhile."""
    from stale import _stale
    seen = []
    done = threading.Event()

    def watch():
        while not done.is_set():
            if _stale.released_calls() > 0:
                seen.append(1)

    t = threading.Thread(target=watch)
    t.start()
    try:
        stale.run(QUICK, **{"method.updates": 20000, "log.every": 100})
    finally:
        done.set()
        t.join()
    assert len(seen) > 0


def test_load_checks_the_schema_version(tmp_path):
    path = tmp_path / "r.h5"
    stale.run(QUICK, out=path, method__updates=20)
    with h5py.File(path, "a") as f:
        f.attrs["schema_version"] = 99
    with pytest.raises(stale.ConfigError, match="schema_version 99"):
        stale.load(path)
    with pytest.raises(stale.ConfigError, match="no such file"):
        stale.load(tmp_path / "missing.h5")
    # one reader: the analysis scripts refuse the same file in the same words
    from stale_analysis.errors import AnalysisError
    from stale_analysis.runs import load_run
    with pytest.raises(AnalysisError, match="schema_version 99"):
        load_run(str(path))


def test_load_reads_a_killed_runs_partial_like_the_scripts(stale_bin, tmp_path):
    """stale.load and the scripts share one reader: a run killed while streaming leaves
    OUT.partial (SWMR), which both open, cut to the rows every series holds."""
    import signal
    import time
    from stale_analysis.runs import load_run
    out = tmp_path / "killed.h5"
    p = subprocess.Popen([stale_bin, "run", QUICK, "method.updates=2000000", "log.every=100",
                          "log.flush_seconds=0.05", "--out", str(out), "--quiet"])
    partial = str(out) + ".partial"
    deadline = time.time() + 30
    while time.time() < deadline:
        time.sleep(0.1)
        if os.path.exists(partial) and os.path.getsize(partial) > 0:
            try:
                if len(load_run(partial).series("k")) > 3:
                    break
            except Exception:
                pass
    p.send_signal(signal.SIGKILL)
    p.wait()
    run = stale.load(partial)
    scripts = load_run(partial)
    assert run.status == scripts.status and len(run.metrics) == len(scripts.series("k")) > 3
    np.testing.assert_array_equal(run.series("grad_norm_sq"), scripts.series("grad_norm_sq"))
    assert list(run.metrics.columns) == list(stale._stale.metric_names())


@pytest.mark.parametrize("name,args,costs", [
    ("pipedream", dict(stages=4, microbatches=16), {}),
    ("interleaved", dict(stages=2, microbatches=8, chunks=2), {}),
    ("zb-h1", dict(stages=4, microbatches=8), dict(forward=[1, 1, 2, 1], weight=0.5, latency=0.1)),
])
def test_schedule_arrays_equal_the_cli_schedule_file(stale_bin, tmp_path, name, args, costs):
    out = tmp_path / "s.h5"
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in args.items()]
    cost_args = ["--costs", *[f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in costs.items()]] \
        if costs else []
    cli(stale_bin, "schedule", name, *flags, *cost_args, "--out", out)
    s = stale.schedule(name, **args, **costs)
    with h5py.File(out) as f:
        g = f["schedule"]
        assert s.makespan == g.attrs["makespan"] and s.bubble_fraction == g.attrs["bubble_fraction"]
        np.testing.assert_array_equal(s.bubble, g["bubble_fraction"][()])
        for key in ("busy", "peak_inflight", "peak_versions"):
            np.testing.assert_array_equal(getattr(s, key), g[key][()], err_msg=key)
        t = s.timeline
        for key in ("start", "end", "stage", "block", "kind", "microbatch", "flags"):
            np.testing.assert_array_equal(t[key].to_numpy(), g[key][()], err_msg=key)
        np.testing.assert_array_equal(s.delays, f["delays"][()])
        costs_attr = f.attrs["costs"]
        assert s.costs == (costs_attr.decode() if isinstance(costs_attr, bytes) else costs_attr)
        ds = f["delay_summary"]
        np.testing.assert_array_equal(s.delay_summary["max_by_read_block"], ds["max_by_read_block"][()])
        np.testing.assert_array_equal(s.steady_delay_summary["mean_by_update_block"], ds["steady_mean_by_update_block"][()])
    with pytest.raises(stale.ConfigError, match="straggler_prob|forward"):
        stale.schedule(name, **args, forward=[1, 2, 3, 4, 5, 6, 7])


def test_schedule_guards_and_files_are_the_clis(stale_bin, tmp_path):
    """One command layer (src/commands/simulate_schedule.cpp): the Python call refuses what the CLI
    refuses, with the same line, instead of being killed by the kernel (issue: exit 137 at
    stages=64, microbatches=5e6), and writes the same trace."""
    import sys
    env = dict(os.environ, STALE_MEMORY_LIMIT="256M")
    r = subprocess.run([stale_bin, "schedule", "pipedream", "--stages", "64", "--microbatches", "5000000"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    cli_line = r.stderr.strip().removeprefix("error: ")
    code = ("import stale\n"
            "try:\n    stale.schedule('pipedream', stages=64, microbatches=5_000_000)\n"
            "except stale.ConfigError as e:\n    print(e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    # the same line, but for the bytes: Python also keeps the timeline's arrays
    size = re.compile(r"needs [0-9.]+ [KMGT]?i?B")
    assert p.returncode == 0 and "needs" in cli_line, (p.returncode, p.stdout, p.stderr)
    assert size.sub("needs …", p.stdout.strip()) == size.sub("needs …", cli_line), (p.stdout, cli_line)
    # the delay tables: kept when small, left out on request, and the trace is the CLI's
    cli(stale_bin, "schedule", "zb-h1", "--stages", "4", "--microbatches", "8", "--trace", tmp_path / "cli.json")
    s = stale.schedule("zb-h1", stages=4, microbatches=8, trace=tmp_path / "py.json")
    assert (tmp_path / "py.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    assert s.delays is not None and s.delays.shape[1] == 4
    assert stale.schedule("zb-h1", stages=4, microbatches=8, delay_table=False).delays is None


def test_sweep_index_equals_the_cli_sweep_index(stale_bin, tmp_path):
    spec = {"base": QUICK, "set": {"method.updates": 200, "log.every": 20},
            "grid": {"method.lr": [0.015625, 0.03125], "seed": [0, 1]}, "zip": {"delay.max": [0, 8]}}
    py = stale.sweep(spec, out=tmp_path / "py", jobs=2)
    assert py.attrs["summary"] == {"total": 8, "ran": 8, "skipped": 0, "failed": 0}
    cli(stale_bin, "sweep", tmp_path / "py" / "sweep.toml", "--out", tmp_path / "cli", "-q", "--jobs", "2")
    ref = stale.load_sweep(tmp_path / "cli")
    drop = [c for c in py.columns if "wall" in c]
    assert list(py.columns) == list(ref.columns)
    assert py.drop(columns=drop).equals(ref.drop(columns=drop))
    # a second call finds every run done
    assert stale.sweep(spec, out=tmp_path / "py").attrs["summary"]["skipped"] == 8


def test_stability_equals_the_cli(stale_bin):
    cfg = os.path.join(EXP, "stability_quadratic.toml")
    text = cli(stale_bin, "stability", cfg, "--lr", "0.05", "--lr", "0.2")
    got = stale.stability(cfg, lr=[0.05, 0.2])
    rhos = [float(line.split()[1].split("=")[1]) for line in text.splitlines() if line.startswith("gamma=")]
    np.testing.assert_allclose(got["rho"], rhos, rtol=1e-11)  # the CLI prints 12 significant digits
    gm = next(line for line in text.splitlines() if line.startswith("gamma_max="))
    assert got["gamma_max"] == pytest.approx(float(gm.split()[0].split("=")[1]), rel=1e-9)
    # γ_max is the boundary: stable just below it, unstable just above
    lo, hi = stale.stability(cfg, lr=[0.99 * got["gamma_max"], 1.01 * got["gamma_max"]], gamma_max=False)["rho"]
    assert lo <= 1 + 1e-9 < hi
    with pytest.raises(stale.ConfigError, match="quadratic"):
        stale.stability(os.path.join(EXP, "e3_logistic.toml"))


def test_run_and_sweep_refuse_what_the_cli_refuses_with_the_same_line(stale_bin, tmp_path):
    """One command layer (src/commands/run_config.cpp, sweep_grid.cpp): what `stale run` and
    `stale sweep` refuse, stale.run and stale.sweep refuse with the same line. Each of these
    once existed in one front end only: the rules between keys (a run kept in memory skipped
    them and ran), a resume of nothing (Python called the missing file damaged), a resume with
    an output path (Python dropped out= silently), a sweep's --jobs range (CLI11's alone)."""
    def cli_line(*args):
        r = subprocess.run([stale_bin, *map(str, args)], capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        return r.stderr.strip().removeprefix("error: ")

    def py_line(call):
        with pytest.raises(stale.ConfigError) as e:
            call()
        return str(e.value)

    keys = {"method.lr_schedule": "cosine", "method.lr_min": 0.5, "method.updates": 50}
    line = cli_line("run", QUICK, *(f"{k}={v}" for k, v in keys.items()), "--out", tmp_path / "r.h5")
    assert "method.lr_min: 0.5 is above method.lr" in line
    assert py_line(lambda: stale.run(QUICK, **keys)) == line  # in memory
    assert py_line(lambda: stale.run(QUICK, out=tmp_path / "r.h5", **keys)) == line
    missing = tmp_path / "nothing.h5"
    line = cli_line("run", "--resume", missing)
    assert "no such run file" in line and py_line(lambda: stale.run(resume=missing)) == line
    line = cli_line("run", "--resume", missing, "--out", tmp_path / "other.h5")
    assert py_line(lambda: stale.run(resume=missing, out=tmp_path / "other.h5")) == line
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(f'base = "{QUICK}"\n[grid]\nseed = [0, 1]\n')
    line = cli_line("sweep", sweep, "--jobs", 2000, "--out", tmp_path / "sw")
    assert "--jobs 2000" in line and py_line(lambda: stale.sweep(sweep, out=tmp_path / "sw", jobs=2000)) == line
    assert not (tmp_path / "sw").exists() and not (tmp_path / "r.h5").exists()


def test_listings_are_the_clis(stale_bin):
    """stale.components, stale.keys and stale.schema are the rows `stale list`, `stale keys` and
    `stale schema` print (src/commands/component_catalog, config_keys, output_schema)."""
    import json
    listed = cli(stale_bin, "list").splitlines()
    families = stale.components()
    assert list(families) == ["methods", "delays", "objectives", "schedules", "rules"]
    shown = 0
    for family, rows in families.items():
        assert f"{family}:" in listed
        for r in rows:
            line = (f"  {r['name']:<18} {r['summary']}" + (f"  [{r['traits']}]" if r["traits"] else "")
                    + (f"  keys: {', '.join(r['keys'])}" if r["keys"] else ""))
            assert line in listed
            shown += 1
    assert shown == sum(line.startswith("  ") for line in listed)
    methods = {m["name"]: m for m in stale.components("methods")["methods"]}
    assert methods["pipedream"]["kind"] == "schedule" and methods["pipedream"]["schedule"] == "pipedream"
    assert methods["pipedream"]["stash"] is True and methods["pipemare"]["predict"] is True
    assert "random" in {o["name"]: o for o in families["objectives"]}["quadratic"]["generators"]
    r = subprocess.run([stale_bin, "list", "optimizers"], capture_output=True, text=True)
    with pytest.raises(stale.ConfigError) as e:
        stale.components("optimizers")
    assert r.returncode == 2 and r.stderr.strip() == f"error: {e.value}"
    # the keys: names, types and defaults as `stale keys` prints them, choices apart
    rows = stale.keys("delay")
    text = [line.split() for line in cli(stale_bin, "keys", "delay").splitlines()]
    assert [k["key"] for k in rows] == [t[0] for t in text]
    assert "rpd" in {k["key"]: k for k in stale.keys()}["method.name"]["choices"]
    assert [k["key"] for k in stale.keys()] == list(stale._stale.config_keys())
    with pytest.raises(stale.ConfigError, match="did you mean 'method.lr'"):
        stale.keys("method.lrx")
    # the output schema: `stale schema --json`, field for field
    assert stale.schema() == json.loads(cli(stale_bin, "schema", "--json"))
    assert [m["name"] for m in stale.schema()["metrics"]] == list(stale._stale.metric_names())


def test_analysis_layer_is_part_of_the_package():
    """stale.analysis is the scripts' analysis module itself (one rule, one fit), installed
    with the package: a fit on a hand-made power law gives its exponent through either name."""
    import numpy as np
    import stale_analysis

    assert stale.analysis.fit_exponent is stale_analysis.fit_exponent
    assert stale.analysis.choose is stale_analysis.choose
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    slope = stale.analysis.fit_exponent(x, 3.0 * x ** 1.5)
    slope = slope[0] if isinstance(slope, tuple) else slope
    assert abs(slope - 1.5) < 1e-12


def test_progress_lines_also_for_a_run_kept_in_memory(capfd):
    """stale.run(progress=True) prints `stale run`'s progress lines whether or not out= is given."""
    stale.run(QUICK, progress=True, method__updates=200)
    err = capfd.readouterr().err
    assert "k=200/200" in err and "k=0/200" in err, err
    stale.run(QUICK, method__updates=200)
    assert capfd.readouterr().err == ""


def test_a_sweeps_progress_in_a_log_is_a_line_a_second(stale_bin, tmp_path):
    """On a terminal the bar redraws in place; into a log (a pipe here) it writes at most a line
    a second and the last line, not a line per run (E1's 190 runs wrote 190 lines)."""
    import time
    spec = tmp_path / "s.toml"
    spec.write_text(f'base = "{QUICK}"\n[set]\n"method.updates" = 50\n"log.every" = 10\n'
                    '[grid]\nseed = [' + ", ".join(map(str, range(24))) + "]\n")
    t = time.time()
    r = subprocess.run([stale_bin, "sweep", str(spec), "--out", str(tmp_path / "sw"), "--jobs", "2", "--ensemble", "1"],
                       capture_output=True, text=True)
    elapsed = time.time() - t
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stderr.splitlines() if " runs (" in line]
    assert lines and lines[-1].split("]")[1].strip().startswith("24/24"), r.stderr
    assert len(lines) <= elapsed + 2, (len(lines), elapsed)


def test_simulated_time_is_zero_at_k_zero_for_methods_with_a_clock():
    """/metrics/time: 0 at k = 0 for a method that keeps the simulated clock (no op has run yet),
    increasing after; NaN throughout for a method without one."""
    pd = stale.run(QUICK, drop_unread=True, **{"method.name": "pipedream", "method.updates": 64})
    t = pd.series("time")
    assert t[0] == 0.0 and np.all(np.diff(t) >= 0) and t[-1] > 0
    assert np.all(np.isnan(stale.run(QUICK, **{"method.updates": 64}).series("time")))


def test_bad_python_arguments_are_one_line_errors_and_numpy_scalars_are_numbers(tmp_path):
    """issue 54 (low): a fractional or huge count, a bytes path and numpy's float64 (whose repr is
    not TOML) reached the C++ side as a truncated number, a signature dump or a refused string"""
    for kw, what in (({"stages": 2.7}, "stages = 2.7"), ({"stages": 2 ** 40}, "stages = 1099511627776"),
                     ({"microbatches": float("nan")}, "microbatches = nan"), ({"out": b"x.h5"}, "out = b'x.h5'"),
                     ({"trace": 3}, "trace = 3")):
        args = {"stages": 4, "microbatches": 8, **kw}
        with pytest.raises(stale.ConfigError, match=re.escape(what)) as e:
            stale.schedule("pipedream", **args)
        assert "\n" not in str(e.value)
    assert stale.schedule("pipedream", stages=np.int64(4), microbatches=8.0).makespan > 0
    with pytest.raises(stale.ConfigError, match=r"out = b'r\.h5'"):
        stale.run(QUICK, out=b"r.h5", method__updates=10)
    a = stale.run(QUICK, method__updates=40, method__lr=np.float64(0.0078125))
    b = stale.run(QUICK, method__updates=40, method__lr=0.0078125)
    np.testing.assert_array_equal(a.metrics["loss"], b.metrics["loss"])


def test_sweep_and_stability_arguments_are_checked_like_schedules(tmp_path):
    """issue 54 (low), the twins of the test above: stale.sweep took jobs=2.5 as 2, a bytes out=
    and shard=3 reached the C++ side as a signature dump; stale.stability cast lr="a" and complex
    step sizes with float() (a TypeError, or the imaginary part dropped). Each is a one-line
    ConfigError naming the argument; nothing is written."""
    spec = tmp_path / "s.toml"
    spec.write_text(f'base = "{QUICK}"\n[grid]\nseed = [0]\n')
    for kw, what in (({"jobs": 2.5}, "jobs = 2.5"), ({"jobs": "2"}, "jobs = '2'"), ({"ensemble": 2 ** 40}, "ensemble = 1099511627776"),
                     ({"shard": 3}, "shard = 3"), ({"out": b"sw"}, "out = b'sw'")):
        with pytest.raises(stale.ConfigError, match=re.escape(what)) as e:
            stale.sweep(spec, **{"out": tmp_path / "sw", **kw})
        assert "\n" not in str(e.value)
    assert not (tmp_path / "sw").exists()
    for kw, what in (({"lr": "a"}, "lr = 'a'"), ({"lr": [0.1, 1j]}, "lr = 1j"), ({"lr": float("inf")}, "lr = inf"),
                     ({"lr": -0.1}, "lr = -0.1"), ({"dense_max": 2.5}, "dense_max = 2.5"), ({"order": 3}, "order = 3"),
                     ({"rel_tol": 0}, "rel_tol = 0")):
        with pytest.raises(stale.ConfigError, match=re.escape(what)) as e:
            stale.stability(QUICK, delay__name="constant", **kw)
        assert "\n" not in str(e.value)
    assert stale.stability(QUICK, lr=np.float64(0.05), gamma_max=False, delay__name="constant")["rho"][0] > 0


def test_a_key_in_two_spellings_complex_data_and_impossible_constants_are_one_line_errors():
    """issue 54 (low): {"method.lr": …, "method": {"lr": …}} resolved by the dict's order, complex X
    lost its imaginary part with only numpy's warning, and constants() were taken as given"""
    with pytest.raises(stale.ConfigError, match=r"method\.lr is given twice in one dict"):
        stale.run({"method.lr": 0.01, "method": {"lr": 0.02}}, method__updates=10)
    X = np.ones((20, 4)) + 1j
    with pytest.raises(stale.ConfigError, match="complex values"):
        stale.run({"objective.name": "quadratic", "objective.stages": 2, "method.updates": 10}, X=X, y=np.ones(20))

    from stale.least_squares import LeastSquaresStages

    class Claims(LeastSquaresStages):
        def __init__(self, claims):
            super().__init__({"objective.dim": 8, "objective.samples": 40, "objective.batch_size": 10,
                              "objective.stages": 2})
            self.claims = claims

        def constants(self):
            return {**super().constants(), **self.claims}

    for claims, what in (({"L": -1.0}, r"constants\(\)\['L'\] = -1\.0"), ({"L": 1.0, "mu": 2.0}, "mu = 2.0 exceeds L"),
                         ({"mu": -0.5}, r"constants\(\)\['mu'\] = -0\.5"), ({"f_star": float("nan")}, "f_star"),
                         ({"f_star": 0.0, "f_low": 1.0}, "f_low = 1.0 exceeds f_star")):
        with pytest.raises(stale.ConfigError, match=what) as e:
            stale.run({"method.updates": 10}, model=Claims(claims))
        assert "\n" not in str(e.value)
    assert stale.run({"method.updates": 10}, model=Claims({})).status == "ok"


def test_a_python_model_too_large_for_the_memory_budget_is_refused_before_its_run(monkeypatch):
    """issue 54 (item 8): a Python model's size is known only once it is built; its run's version
    store (rpd, delay.max = 60: 61 versions of w) is estimated then, against the budget, and
    refused in one line instead of allocating until the OOM killer ends it"""
    from stale.least_squares import LeastSquaresStages

    model = LeastSquaresStages({"objective.dim": 1000, "objective.samples": 40, "objective.batch_size": 10,
                                "objective.stages": 4})
    monkeypatch.setenv("STALE_MEMORY_LIMIT", "200K")  # 61 × 1000 × 8 B ≈ 0.5 MB of versions
    with pytest.raises(stale.ConfigError, match=r"needs about .* of memory.*version store.*the model's parameters") as e:
        stale.run({"method.name": "rpd", "delay.name": "uniform", "delay.max": 60, "method.updates": 10}, model=model)
    assert "\n" not in str(e.value)
    monkeypatch.setenv("STALE_MEMORY_LIMIT", "1G")
    assert stale.run({"method.name": "rpd", "delay.name": "uniform", "delay.max": 60, "method.updates": 10},
                     model=model).status == "ok"
