#!/usr/bin/env python3
"""Draw the timeline of a pipeline schedule: a schedule file written by
`stale schedule NAME ... --out FILE.h5`, or the /schedule group of a training run of a
schedule method (`stale run … method.name=pipedream`).

  scripts/plot_schedule.py FILE.h5 [-o out.png] [--until T] [--no-labels]

One row per stage (device), time to the right, each row labelled with the blocks its device
holds (a V placement, zb-v and dualpipev, shows as blocks d and 2S - 1 - d, and the title says
"V"). F is blue, B green, W purple; an optimizer step (flag on the op that carries it) is
marked by a black tick at the op's end, a replica average by a red one; later model chunks
are lighter; an overlapped F&B pair (dualpipev) is framed by a dashed box. Each cell shows its
micro-batch number (micro-batch.chunk with several chunks) when it is wide enough. Idle time is
hatched, so the bubble is what you see. The title gives makespan, bubble fraction and the
steady-state delays.
"""
from __future__ import annotations

import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.patches import Patch, Rectangle  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stale_analysis import AnalysisError, open_h5, run_cli  # noqa: E402

COLORS = {0: "#4c78a8", 1: "#59a14f", 2: "#b07aa1"}  # F, B, W
NAMES = {0: "F", 1: "B", 2: "W"}


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def load(path):
    """The op table and the facts of the title, from a schedule file (`stale schedule --out`)
    or from a training run of a schedule method (`stale run`, its /schedule group). A run
    file does not carry the schedule file's root attributes, so stages and chunks are read
    from the op table itself and the name and delays from /schedule's attributes."""
    with open_h5(path) as f:
        if "schedule" not in f:
            raise AnalysisError(f"{path}: no /schedule group (a run of a method without a schedule, e.g. rpd or sgd?)")
        g = f["schedule"]
        if "start" not in g:
            raise AnalysisError(f"{path}: /schedule has no op table (it is left out above 10^7 ops); "
                                "draw it with `stale schedule NAME ... --out FILE.h5`")
        ops = {k: g[k][()] for k in ("start", "end", "stage", "block", "kind", "microbatch", "flags")}
        info = {k: text(v) for k, v in f.attrs.items() if k != "config"}
        info.update({k: text(v) for k, v in g.attrs.items() if k not in info})
        stages = int(ops["stage"].max()) + 1 if len(ops["stage"]) else 1
        info.setdefault("stages", str(stages))
        info.setdefault("chunks", str(max(1, (int(ops["block"].max()) + 1) // stages) if len(ops["block"]) else 1))
        info.setdefault("schedule", info.get("name", "?"))
        info["makespan"] = float(g.attrs["makespan"])
        info["bubble"] = float(g.attrs["bubble_fraction"])
        delay = {}
        if "delay_summary" in f and "max_delay" in f["delay_summary"].attrs:
            delay = {k: float(v) for k, v in f["delay_summary"].attrs.items()}
        elif "max_delay" in g.attrs:  # a run file: the simulated schedule's delays on /schedule
            delay = {k: float(g.attrs[k]) for k in ("max_delay", "steady_max_delay", "steady_mean_delay") if k in g.attrs}
            delay["steady_updates"] = 1.0 if delay.get("steady_max_delay", 0) > 0 else 0.0
        if delay:
            info["delay"] = delay
        return ops, info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("-o", "--out", help="PNG path (default: FILE with .png)")
    ap.add_argument("--until", type=float, help="draw only ops that start before this time")
    ap.add_argument("--no-labels", action="store_true", help="no micro-batch numbers in the cells")
    args = ap.parse_args(argv)

    ops, info = load(args.file)
    out = args.out or os.path.splitext(args.file)[0] + ".png"
    stages = int(info["stages"])
    chunks = int(info.get("chunks", 1))
    horizon = info["makespan"] if args.until is None else min(args.until, info["makespan"])
    keep = ops["start"] < horizon
    start, end = ops["start"][keep], np.minimum(ops["end"][keep], horizon)
    stage, kind, mb, flags, block = (ops[k][keep] for k in ("stage", "kind", "microbatch", "flags", "block"))

    width = min(60.0, max(8.0, 0.12 * horizon + 3))
    height = min(40.0, max(2.0, 0.35 * stages + 1.2))
    fig, ax = plt.subplots(figsize=(width, height))
    # idle time first, hatched; ops are drawn over it
    for s in range(stages):
        ax.add_patch(Rectangle((0, s - 0.4), horizon, 0.8, facecolor="white", edgecolor="#bbbbbb", hatch="///", lw=0))
    verts, colors = [], []
    for t0, t1, s, k, b in zip(start, end, stage, kind, block):
        verts.append([(t0, s - 0.4), (t1, s - 0.4), (t1, s + 0.4), (t0, s + 0.4)])
        # later chunks of the interleaved schedule in lighter shades of their kind's colour
        shade = 0.45 * (b // stages) / (chunks - 1) if chunks > 1 else 0.0
        rgb = np.array(matplotlib.colors.to_rgb(COLORS[int(k)]))
        colors.append(tuple(rgb + (1 - rgb) * shade))
    ax.add_collection(PolyCollection(verts, facecolors=colors, edgecolors="white", linewidths=0.4))

    # an F&B pair: the F flagged 4 (op_flag::Overlap) and the B and W after it on its device
    for i in np.nonzero(flags & 4)[0]:
        j = min(i + 2, len(end) - 1)
        ax.add_patch(Rectangle((start[i], stage[i] - 0.46), end[j] - start[i], 0.92, fill=False, edgecolor="black",
                               linestyle="--", lw=0.9))
    for t1, s, fl in zip(end, stage, flags):
        if fl & 1:
            ax.plot([t1, t1], [s - 0.4, s + 0.4], color="black", lw=0.8)
        if fl & 2:
            ax.plot([t1, t1], [s - 0.45, s + 0.45], color="red", lw=1.2)

    ax.set_xlim(0, horizon)
    ax.set_ylim(stages - 0.5, -0.5)
    ax.set_yticks(range(stages))
    held = [sorted(set(int(b) for b in ops["block"][ops["stage"] == s])) for s in range(stages)]
    v_shape = chunks == 2 and stages > 1 and all(h == [s, 2 * stages - 1 - s] for s, h in enumerate(held))
    ax.set_yticklabels([f"stage {s}" + (f" (blocks {', '.join(map(str, h))})" if chunks > 1 else "")
                        for s, h in enumerate(held)])
    ax.set_xlabel("time (slots with unit costs)")
    title = (f"{info.get('schedule', '?')}: S={stages} M={info.get('microbatches', '?')}"
             f" a={info.get('accumulation', '?')}" + (f" v={chunks}" if chunks > 1 else "") + (" V" if v_shape else "")
             + f"   makespan {info['makespan']:.6g}   bubble {info['bubble']:.3f}")
    d = info.get("delay")
    if d and d.get("steady_updates", 0) > 0:
        title += f"   steady delay max {d['steady_max_delay']:.0f} mean {d['steady_mean_delay']:.2f}"
    elif d and "mean_delay" in d:
        title += f"   delay max {d['max_delay']:.0f} mean {d['mean_delay']:.2f}"
    elif d:
        title += f"   delay max {d['max_delay']:.0f}"
    ax.set_title(title, fontsize=10)
    handles = [Patch(color=COLORS[k], label=NAMES[k]) for k in sorted(set(int(k) for k in kind))]
    handles.append(Patch(facecolor="white", edgecolor="#999999", hatch="///", label="idle"))
    if (flags & 4).any():
        handles.append(Patch(fill=False, edgecolor="black", linestyle="--", label="F&B pair"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()

    # micro-batch numbers where they fit, measured on the laid-out axes
    if not args.no_labels and len(start) <= 20000:
        fontsize = 7
        px_per_unit = ax.get_window_extent().width / horizon
        char_px = 0.62 * fontsize * fig.dpi / 72
        for t0, t1, s, m, b in zip(start, end, stage, mb, block):
            label = str(m) if chunks == 1 else f"{m}.{b // stages}"
            if (t1 - t0) * px_per_unit >= char_px * (len(label) + 0.2):
                ax.text((t0 + t1) / 2, s, label, ha="center", va="center", fontsize=fontsize, color="white")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(run_cli(main))
