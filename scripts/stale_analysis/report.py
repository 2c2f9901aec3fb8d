"""One self-contained HTML page of a sweep, for sharing (`stale report SWEEP_DIR`,
`scripts/report.py SWEEP_DIR [-o FILE]`, `python3 -m stale_analysis.report`):

- warnings first: failed runs (with their log line), diverged runs, runs with γ > 1/L (outside
  the §3 bound's assumption), step sizes chosen at an edge of their grid;
- the sweep's configuration: the sweep file and base config at the paths index.h5 records, and
  the resolved config every run shares (configs/<run>.toml) with the keys the sweep varies;
- the index (index.csv) as a table that sorts on a click on its header (inline JavaScript);
- f − f_* (the loss where f_* is unknown) against k and against simulated time, one panel per
  group of the sweep's varying keys (step size and seed aside), one mean curve over the seeds per
  step size with its min–max band (a diverged curve ends and no longer sets its panel's y range);
- every configuration at the step size the stable rule chose for it, in one panel per x axis;
- the measured (1/K)Σ‖∇f(w_k)‖² against the bound for every method (stale_analysis.bound);
- the step size the stable rule chooses per configuration (stale_analysis.stepsize), grid edges
  marked.

Figures are PNG (matplotlib, Agg) embedded as base64 data URIs, styles and script are inline:
the page has no external reference and reads offline.
"""
from __future__ import annotations

import argparse
import base64
import csv
import html
import io
import math
import os
import textwrap
import sys
import tomllib

import numpy as np

from .bound import bound_runs, delta_text, method_table, plot_bound
from .errors import AnalysisError, run_cli
from .grouping import fmt_value, sort_key
from .runs import flatten, load_run, open_h5
from .stepsize import select
from .sweeps import axes_of, group_rows, mean_curve, read_index

LR_KEY, SEED_KEY = "method.lr", "seed"
PANELS_PER_FIGURE = 24

CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; margin-top: 1.8em; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; font-size: .85em; }
table { border-collapse: collapse; font-size: .82em; margin: .5em 0; }
th, td { border: 1px solid #ddd; padding: .2em .45em; text-align: right; white-space: nowrap; }
th { background: #eee; position: sticky; top: 0; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[data-dir="asc"]::after { content: " \\25B2"; } table.sortable th[data-dir="desc"]::after { content: " \\25BC"; }
td.text { text-align: left; }
tr.diverged td { background: #fff1e6; } tr.failed td { background: #fde8e8; }
.scroll { max-height: 36em; overflow: auto; border: 1px solid #ddd; display: inline-block; max-width: 100%; }
.warn { background: #fff8e1; border-left: 4px solid #f0b400; padding: .4em .8em; }
.ok { background: #eef8ee; border-left: 4px solid #3a3; padding: .4em .8em; }
img { max-width: 100%; }
table.narrow th { white-space: normal; max-width: 9em; vertical-align: bottom; }
.note { color: #555; font-size: .9em; }
"""

# sorts a table on a click on a header cell: numbers numerically (a cell's data-v holds its full
# value), text alphabetically, empty cells last; a second click reverses
SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th) {
  th.addEventListener("click", function () {
    var table = th.closest("table"), body = table.tBodies[0];
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var dir = th.getAttribute("data-dir") === "asc" ? "desc" : "asc";
    table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("data-dir"); });
    th.setAttribute("data-dir", dir);
    var value = function (row) { var c = row.cells[col]; return c.hasAttribute("data-v") ? c.getAttribute("data-v") : c.textContent; };
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = value(a), y = value(b);
      if (x === "" || y === "") return x === y ? 0 : (x === "" ? 1 : -1);
      var nx = Number(x), ny = Number(y), r;
      if (!isNaN(nx) && !isNaN(ny)) r = nx - ny; else r = x < y ? -1 : x > y ? 1 : 0;
      return dir === "asc" ? r : -r;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""


def esc(v) -> str:
    return html.escape(str(v), quote=True)


def png_uri(fig) -> str:
    """The figure as a PNG data URI (the page carries its images); the figure is closed."""
    from .plotting import plt
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def img(uri: str, alt: str) -> str:
    return f'<p><img src="{uri}" alt="{esc(alt)}"></p>'


def short(text: str) -> str:
    """A long float as 6 significant digits for display; other cells as they are."""
    try:
        v = float(text)
    except ValueError:
        return text
    if not math.isfinite(v) or len(text) <= 9 or text.lstrip("-").isdigit():
        return text
    return f"{v:.6g}"


# ---------------------------------------------------------------------------------------------
def stored_text(path: str, sweep_dir: str) -> tuple[str | None, str]:
    """(text, where it was read) of a file the index records by the path the sweep was given:
    as given (absolute, or from here), then beside the sweep folder, then inside it."""
    if not path:
        return None, ""
    cands = [path] if os.path.isabs(path) else [path, os.path.join(os.path.dirname(os.path.abspath(sweep_dir)), path),
                                                 os.path.join(sweep_dir, path), os.path.join(sweep_dir, os.path.basename(path))]
    for c in cands:
        if os.path.isfile(c):
            with open(c, encoding="utf-8", errors="replace") as f:
                return f.read(), c
    return None, ""


def index_attrs(sweep_dir: str) -> dict:
    # without index.h5 (missing or unreadable) the report still renders, without the sweep's files
    try:
        with open_h5(os.path.join(sweep_dir, "index.h5"), "sweep index") as f:
            return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
    except AnalysisError:
        return {}


def shared_config(sweep_dir: str, rows: list[dict]) -> tuple[dict, dict]:
    """(keys with one value in every run's resolved config, keys whose values differ → values),
    from configs/<run>.toml."""
    flats = []
    for r in rows:
        p = os.path.join(sweep_dir, "configs", r["run"] + ".toml")
        if os.path.exists(p):
            with open(p, "rb") as f:
                try:
                    flats.append(flatten(tomllib.load(f)))
                except tomllib.TOMLDecodeError:
                    continue
    if not flats:
        return {}, {}
    keys = sorted(set().union(*flats))
    same, differ = {}, {}
    for k in keys:
        vals = {fmt_value(fl.get(k, "(absent)")) for fl in flats}
        if len(vals) == 1:
            same[k] = vals.pop()
        else:
            differ[k] = sorted(vals, key=sort_key)
    return same, differ


# ---------------------------------------------------------------------------------------------
def progress_metric(sweep_dir: str, rows: list[dict]) -> str:
    """'subopt' where f_* is known (a finite f − f_* at the start), else 'loss'."""
    for r in rows:
        run = load_run(os.path.join(sweep_dir, r["path"]))
        if "subopt" in run.metrics and len(run.metrics["subopt"]):
            return "subopt" if math.isfinite(float(run.metrics["subopt"][0])) else "loss"
    return "subopt"


def has_time(sweep_dir: str, rows: list[dict]) -> bool:
    run = load_run(os.path.join(sweep_dir, rows[0]["path"]))
    t = np.asarray(run.metrics["time"], dtype=float) if "time" in run.metrics else np.array([])
    return len(t) > 1 and math.isfinite(float(t[-1]))


def panel_title(cfg: tuple, width: int = 0) -> str:
    """the panel's keys and values; with a width, wrapped to lines of that many characters (a row of
    three panels with long keys overlapped one another's titles)"""
    text = ", ".join(f"{k}={v}" for k, v in cfg) or "all runs"
    return textwrap.fill(text, width, break_long_words=False) if width else text


# the x axes' labels, with the unit (simulated time is in the cost model's units: t_F = 1 by default)
X_LABELS = {"k": "block updates k", "time": "simulated time (cost-model units; t_F = 1 by default)"}


def y_limits(curves) -> tuple[float, float] | None:
    """(low, high) of a log axis from the finite positive values of the curves that did not
    diverge, with a factor 2 margin; None when no such value. A diverged curve (its mean ends
    non-finite) still shows, but its climb to 10³⁰⁰ no longer flattens every other curve."""
    vals = [np.asarray(m, float) for m, diverged in curves if not diverged]
    vals = np.concatenate([v[np.isfinite(v) & (v > 0)] for v in vals]) if vals else np.array([])
    if not len(vals):
        return None
    return float(vals.min()) / 2, float(vals.max()) * 2


def curve_figures(sweep_dir: str, rows: list[dict], x: str, y: str) -> tuple[list[str], list[str]]:
    """PNG data URIs of y against x, one panel per group of the varying keys other than the step
    size and the seed, one mean curve per step size; and the panels left out (no simulated time)."""
    from .plotting import plt
    panels = group_rows(rows, [LR_KEY, SEED_KEY])
    if x == "time":
        skipped = [panel_title(cfg) for cfg, rs in panels if not has_time(sweep_dir, rs)]
        panels = [(cfg, rs) for cfg, rs in panels if has_time(sweep_dir, rs)]
    else:
        skipped = []
    uris = []
    for start in range(0, len(panels), PANELS_PER_FIGURE):
        chunk = panels[start:start + PANELS_PER_FIGURE]
        ncols = min(3, len(chunk))
        nrows = math.ceil(len(chunk) / ncols)
        fig, axs = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.6 * nrows), squeeze=False)
        for ax in axs.flat[len(chunk):]:
            ax.set_visible(False)
        for ax, (cfg, rs) in zip(axs.flat, chunk):
            drawn = []  # (mean, diverged) per curve, for the y range
            by_lr: dict = {}
            for r in rs:
                by_lr.setdefault(r.get(LR_KEY, ""), []).append(r)
            for lr in sorted(by_lr, key=sort_key):
                c = mean_curve(sweep_dir, by_lr[lr], x, y)
                if c is None:
                    continue
                xs, mean, lo, hi, runs = c
                xs = xs.copy()
                if x == "time" and len(xs) and not math.isfinite(xs[0]):
                    xs[0] = 0.0  # k = 0: no op has run yet
                label = (f"γ = {lr}" if lr != "" else "mean") + f" ({len(runs)} run{'s' if len(runs) > 1 else ''})"
                diverged = bool(len(mean) and not math.isfinite(mean[-1]))
                if diverged:
                    label += ", diverged"
                drawn.append((mean, diverged))
                line, = ax.plot(xs, mean, lw=1.3, label=label)
                if len(runs) > 1:
                    with np.errstate(all="ignore"):
                        ax.fill_between(xs, lo, np.where(np.isfinite(hi), hi, np.nan), color=line.get_color(),
                                        alpha=0.15, lw=0)
            ax.set_yscale("log")
            lim = y_limits(drawn)
            if lim is not None and any(d for _, d in drawn):
                ax.set_ylim(*lim)
            ax.set_title(panel_title(cfg, 48), fontsize=8)
            ax.set_xlabel(X_LABELS[x], fontsize=8)
            ax.set_ylabel("f − f_*" if y == "subopt" else "loss", fontsize=8)
            ax.tick_params(labelsize=7)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=6.5)
        fig.tight_layout()
        uris.append(png_uri(fig))
    return uris, skipped


# ---------------------------------------------------------------------------------------------
def index_table(header: list[str], rows: list[dict]) -> str:
    """index.csv as an HTML table, every cell's CSV text in data-v (and in the cell, long floats
    shortened to 6 digits)."""
    out = ['<div class="scroll"><table id="index" class="sortable"><thead><tr>']
    out += [f"<th>{esc(h)}</th>" for h in header]
    out.append("</tr></thead><tbody>")
    for r in rows:
        cls = "diverged" if r["status"] == "diverged" else "" if r["status"] == "ok" else "failed"
        out.append(f'<tr class="{cls}">' if cls else "<tr>")
        for h in header:
            v = r.get(h) or ""
            shown = short(v)
            kind = "" if shown != v or _is_number(v) else ' class="text"'
            out.append(f'<td data-v="{esc(v)}"{kind}>{esc(shown)}</td>')
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _is_number(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False


def simple_table(header: list[str], body: list[list[str]], cls: str = "sortable") -> str:
    """a table whose headers wrap, in a box that scrolls sideways: the bound's eleven columns were
    wider than the page"""
    out = [f'<div class="scroll"><table class="{cls} narrow"><thead><tr>'] + [f"<th>{esc(h)}</th>" for h in header]
    out.append("</tr></thead><tbody>")
    for row in body:
        out.append("<tr>" + "".join(f'<td class="text">{esc(c)}</td>' for c in row) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def chosen_figure(sweep_dir: str, y: str) -> str | None:
    """PNG data URI: every configuration at its chosen step size (the stable rule) in one panel per
    x axis, so that methods are compared where each is tuned; None without a step-size axis"""
    from .plotting import plt
    panels = []
    for x in ("k", "time"):
        cs = [c for c in select(sweep_dir, LR_KEY, SEED_KEY, "stable", False, x, y) if c["curve"] is not None]
        if x == "time":
            cs = [c for c in cs if np.any(np.isfinite(c["curve"][0][1:]))]
        if cs:
            panels.append((x, cs))
    if not panels:
        return None
    fig, axs = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 4.4), squeeze=False)
    for ax, (x, cs) in zip(axs.flat, panels):
        for c in cs:
            xs, mean = c["curve"][0].copy(), c["curve"][1]
            if x == "time" and len(xs) and not math.isfinite(xs[0]):
                xs[0] = 0.0
            cfg = ", ".join(f"{k}={v}" for k, v in c["config"].items()) or "all runs"
            ax.plot(xs, mean, lw=1.3, label=textwrap.shorten(f"{cfg}: γ = {c['lr']:g}", 70))
        ax.set_yscale("log")
        ax.set_xlabel(X_LABELS[x], fontsize=8)
        ax.set_ylabel("f − f_*" if y == "subopt" else "loss", fontsize=8)
        ax.tick_params(labelsize=7)
    handles, labels = axs.flat[0].get_legend_handles_labels()
    rows = math.ceil(len(labels) / 2)
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=6.5, frameon=False)
    fig.tight_layout(rect=(0, min(0.5, 0.034 * rows + 0.03), 1, 1))
    return png_uri(fig)


def log_line(sweep_dir: str, run: str) -> str:
    p = os.path.join(sweep_dir, "logs", run + ".log")
    if not os.path.exists(p):
        return ""
    with open(p, encoding="utf-8", errors="replace") as f:
        lines = [line.strip() for line in f if line.strip()]
    return lines[-1] if lines else ""


def listing(items: str, n: int) -> str:
    """<li> items as a list, folded away (a click opens it) when there are more than 8."""
    return f"<ul>{items}</ul>" if n <= 8 else f"<details><summary>the {n} runs</summary><ul>{items}</ul></details>"


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def fnum(v: float) -> str:
    return f"{v:.3g}" if math.isfinite(v) else "—"


# ---------------------------------------------------------------------------------------------
def build_report(sweep_dir: str) -> tuple[str, dict]:
    """The page's HTML and what it found: {'runs', 'figures', 'warnings': [text, ...]}."""
    rows = read_index(sweep_dir)
    if not rows:
        raise AnalysisError(f"{sweep_dir}: the index has no rows")
    with open(os.path.join(sweep_dir, "index.csv"), newline="") as f:
        header = next(csv.reader(f))
    axes = axes_of(rows)
    done = [r for r in rows if r["status"] in ("ok", "diverged")]
    name = os.path.basename(os.path.normpath(os.path.abspath(sweep_dir)))
    warnings: list[str] = []
    sections: list[str] = []
    figures = 0

    # the bound for every run of every method: also where divergence and γ > 1/L come from
    bruns = bound_runs([sweep_dir]) if done else []
    by_run = {b.run: b for b in bruns}

    failed = [r for r in rows if r["status"] not in ("ok", "diverged")]
    if failed:
        items = "".join(f"<li><code>{esc(r['run'])}</code> ({esc(r['status'])}; "
                        f"{esc(', '.join(f'{a}={r[a]}' for a in axes))})"
                        + (f": <code>{esc(log_line(sweep_dir, r['run']))}</code>" if log_line(sweep_dir, r["run"]) else "")
                        + "</li>" for r in failed)
        warnings.append(f"{len(failed)} of {plural(len(rows), 'run')} did not finish (failed, missing or interrupted):"
                        + listing(items, len(failed)))
    div = [b for b in bruns if b.diverged is not None]
    if div:
        items = "".join(f"<li><code>{esc(b.run)}</code> ({esc(', '.join(f'{k}={v}' for k, v in b.axes.items()))}): "
                        f"{esc(b.diverged)}</li>" for b in div)
        warnings.append(f"{plural(len(div), 'run')} diverged (status not ok, a non-finite value, or f − f_* above 10⁶ × its "
                        f"start); their curves end where they diverged:" + listing(items, len(div)))
    above = [b for b in bruns if not b.within]
    if above:
        items = "".join(f"<li><code>{esc(b.run)}</code> ({esc(', '.join(f'{k}={v}' for k, v in b.axes.items()))})</li>"
                        for b in above)
        warnings.append(f"{plural(len(above), 'run')} {'has' if len(above) == 1 else 'have'} γ &gt; 1/L, outside the §3 bound's assumption (index column "
                        f"<code>lr_within_1_over_L</code> = 0); the bound is not checked for them:" + listing(items, len(above)))

    y = progress_metric(sweep_dir, done) if done else "subopt"
    choices = select(sweep_dir, LR_KEY, SEED_KEY, "stable", False, "k", y) if LR_KEY in axes and done else []
    edges = [c for c in choices if c["grid_edge"]]
    for c in edges:
        cfg = ", ".join(f"{k}={v}" for k, v in c["config"].items()) or "(all)"
        warnings.append(f"{esc(cfg)}: the chosen γ = {c['lr']:g} is the {c['grid_edge']} step size of the grid; the "
                        f"rule's choice may lie beyond it: widen the grid on that side.")

    # --- configuration
    attrs = index_attrs(sweep_dir)
    conf = []
    for what, key in (("sweep file", "sweep"), ("base config", "base")):
        path = attrs.get(key, "")
        text, where = stored_text(path, sweep_dir)
        if text is not None:
            conf.append(f"<h3>{what}: <code>{esc(path)}</code></h3><pre>{esc(text)}</pre>")
        elif path:
            conf.append(f'<h3>{what}: <code>{esc(path)}</code></h3><p class="note">not found from here (index.h5 keeps '
                        f"its path, not its text); the resolved config below is the runs' own.</p>")
    same, differ = shared_config(sweep_dir, rows)
    if same:
        conf.append(f"<details><summary>the resolved config every run shares ({len(same)} keys, configs/&lt;run&gt;.toml)"
                    "</summary><pre>" + esc("\n".join(f"{k} = {v}" for k, v in same.items())) + "</pre></details>")
    if differ:
        conf.append("<h3>keys the runs differ in</h3>"
                    + simple_table(["key", "values"], [[k, ", ".join(v)] for k, v in differ.items()], "plain"))
    if "epsilon" in attrs and float(attrs["epsilon"]) > 0:
        conf.append(f"<p>time-to-ε threshold ε = {float(attrs['epsilon']):g}</p>")
    sections.append(("config", "Configuration", "".join(conf) or '<p class="note">no configuration stored.</p>'))

    # --- the index
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    sections.append(("index", "Index", f"<p>{len(rows)} runs ({esc(', '.join(f'{s} {n}' for s, n in sorted(counts.items())))});"
                     " click a column's header to sort by it. Full values of index.csv (shown to 6 digits) are kept in "
                     "each cell.</p>" + index_table(header, rows)))

    # --- curves
    from .plotting import plt  # noqa: F401  (matplotlib with the Agg backend)
    curves = []
    if done:
        ylabel = "f − f_*" if y == "subopt" else "the loss (f_* unknown)"
        for x, xname in X_LABELS.items():
            uris, skipped = curve_figures(sweep_dir, done, x, y)
            curves.append(f"<h3>{esc(ylabel)} against {xname}</h3>")
            if skipped:
                curves.append(f'<p class="note">no simulated time (a method without a schedule): '
                              f"{esc('; '.join(skipped))}</p>")
            curves += [img(u, f"{ylabel} against {xname}") for u in uris]
            figures += len(uris)
        curves.insert(0, "<p>One panel per group of the sweep's varying keys (step size and seed aside); a curve per step"
                         " size: the mean over its seeds with the min–max band. A diverged run makes its curve end.</p>")
    else:
        curves.append('<p class="note">no finished run.</p>')
    sections.append(("curves", "Loss curves", "".join(curves)))
    if choices:
        uri = chosen_figure(sweep_dir, y)
        if uri is not None:
            figures += 1
            sections.append(("chosen", "At their chosen step sizes",
                             "<p>Every configuration at the step size the stable rule chose for it (the table below), "
                             "mean over the seeds: the methods compared where each is tuned.</p>"
                             + img(uri, "every configuration at its chosen step size")))

    # --- the bound per method
    if bruns:
        fig, ax = plt.subplots(figsize=(6.4, 5.2))
        drawn = plot_bound(ax, bruns)
        ax.set_title(r"measured against the §3 bound, runs with $\gamma \leq 1/L$", fontsize=9)
        fig.tight_layout()
        n_est = sum(b.L_estimated for b in bruns)
        body = [f"<p>The bound 2SΔ₀/(γK) + γSLG² + γ²L²δ²G² of docs/theory.md §3 for every method, each run with its "
                f"own δ (/theory/delta); {drawn} runs satisfy its assumptions and are drawn at their final K.</p>",
                img(png_uri(fig), "measured mean squared gradient norm against the bound") if drawn else
                '<p class="note">no figure: no run satisfies the bound\'s assumptions (γ ≤ 1/L, an exact running mean, '
                "not diverged); the table says why for each method.</p>"]
        if n_est:
            body.insert(1, f'<p class="note">{plural(n_est, "run")} of {len(bruns)} use{"s" if n_est == 1 else ""} an '
                           "<b>estimated L</b> (the objective has no certified L; /theory/L_source): the largest curvature "
                           "seen along the run, a lower estimate of L, so their bound is an estimate, not a certificate.</p>")
        figures += 1 if drawn else 0
        plt.close(fig)
        body.append(simple_table(
            ["method", "δ of the bound", "L of the bound", "runs", "checked", "γ > 1/L", "diverged (γ ≤ 1/L)", "sampled mean",
             "violations (measured > bound at a logged K)", "measured/bound at the final K: max", "median"],
            [[m["method"], m["delta"], m["L"], str(m["runs"]), str(m["checked"]), str(m["lr_above_1_over_L"]),
              str(m["diverged"]), str(m["sampled_mean"]), str(m["violations"]), fnum(m["max_final_ratio"]),
              fnum(m["median_final_ratio"])]
             for m in method_table(bruns)]))
        viol = [b for b in bruns if b.checked and b.violated]
        if viol:
            warnings.append(f"{plural(len(viol), 'run')} exceed{'s' if len(viol) == 1 else ''} the bound at some logged K (see the bound section).")
        sections.append(("bound", "The bound per method", "".join(body)))

    # --- step sizes
    if choices:
        body = ["<p>The stable rule of docs/theory.md §8 (scripts/stale_analysis/stepsize.py) on the mean curve of "
                f"{'f − f_*' if y == 'subopt' else 'the loss'} over the seeds; a choice at an end of the grid is marked.</p>",
                simple_table(["configuration", "chosen γ", "grid edge", "why", "final mean [min, max]", "seeds"],
                             [[", ".join(f"{k}={v}" for k, v in c["config"].items()) or "(all)", f"{c['lr']:g}",
                               c["grid_edge"] or "—", c["why"],
                               f"{c['final_mean']:.4g} [{c['final_min']:.3g}, {c['final_max']:.3g}]", str(c["seeds"])]
                              for c in choices])]
    else:
        body = [f'<p class="note">{LR_KEY} is not an axis of this sweep: no step size to choose.</p>']
    sections.append(("stepsize", "Chosen step sizes", "".join(body)))

    # --- page
    first = load_run(os.path.join(sweep_dir, done[0]["path"])) if done else None
    version = f"stale {first.attrs.get('version')} (git {first.attrs.get('git_sha')})" if first else ""
    deltas = {m: delta_text(b.delta for b in bruns if b.method == m) for m in sorted({b.method for b in bruns})}
    warn_html = ('<div class="warn"><ul>' + "".join(f"<li>{w}</li>" for w in warnings) + "</ul></div>" if warnings
                 else '<div class="ok">No warnings: every run finished, none diverged, every γ ≤ 1/L, no step size at a grid edge.</div>')
    toc = " · ".join(f'<a href="#{sid}">{esc(title)}</a>' for sid, title, _ in sections)
    page = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>stale sweep report: {esc(name)}</title><style>{CSS}</style></head><body>",
        f"<h1>stale sweep report: {esc(name)}</h1>",
        f"<p>{len(rows)} runs over {esc(', '.join(axes) or 'no axis')}; methods: "
        f"{esc('; '.join(f'{m} ({d})' for m, d in deltas.items()) or '—')}. {esc(version)}</p>",
        f"<p>{toc}</p>", '<h2 id="warnings">Warnings</h2>', warn_html,
    ]
    for sid, title, body in sections:
        page.append(f'<h2 id="{sid}">{esc(title)}</h2>{body}')
    page.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(page) + "\n", {"runs": len(rows), "figures": figures, "warnings": warnings}


def main(argv=None):
    p = argparse.ArgumentParser(prog="stale report", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sweep_dir", help="a sweep's output folder (holding index.csv)")
    p.add_argument("-o", "--out", default=None, help="HTML file to write (default: SWEEP_DIR/report.html)")
    a = p.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise AnalysisError("stale report draws its figures with matplotlib, which is not installed "
                            "(pip install matplotlib, or bash scripts/setup.sh)") from None
    text, info = build_report(a.sweep_dir)
    out = a.out or os.path.join(a.sweep_dir, "report.html")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {out}: {info['runs']} runs, {info['figures']} figures, {len(info['warnings'])} warnings")


if __name__ == "__main__":
    sys.exit(run_cli(main))
