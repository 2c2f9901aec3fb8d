"""The sweep report (scripts/stale_analysis/report.py, scripts/report.py, `stale report`): its table
is index.csv, its figures are embedded PNGs, it names no external URL, a missing matplotlib or
Python is one line, and headless Chromium renders it (skipped without chromium)."""
from __future__ import annotations

import base64
import csv
import os
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from conftest import ROOT, mixed_sweep, script


# --- the report --------------------------------------------------------------------------------
class Page(HTMLParser):
    """The index table's rows (each cell's data-v), every img src, every src/href."""

    def __init__(self):
        super().__init__()
        self.rows, self.header, self.imgs, self.links = [], [], [], []
        self._in_index = self._in_th = False
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k in ("src", "href"):
            if k in a:
                self.links.append(a[k])
        if tag == "img":
            self.imgs.append(a.get("src", ""))
        if tag == "table" and a.get("id") == "index":
            self._in_index = True
        elif self._in_index and tag == "tr":
            self.rows.append([])
        elif self._in_index and tag == "td":
            self.rows[-1].append(a.get("data-v"))
        elif self._in_index and tag == "th":
            self._in_th = True

    def handle_endtag(self, tag):
        if tag == "table":
            self._in_index = False
        if tag == "th":
            self._in_th = False

    def handle_data(self, data):
        if self._in_index and self._in_th:
            self.header.append(data)


def parse(path) -> Page:
    p = Page()
    p.feed(open(path, encoding="utf-8").read())
    p.rows = [r for r in p.rows if r]
    return p


def check_page(path, sweep_dir):
    page = parse(path)
    with open(os.path.join(sweep_dir, "index.csv"), newline="") as f:
        want = list(csv.reader(f))
    assert page.header == want[0]
    assert page.rows == want[1:]  # the table is index.csv, row for row, cell for cell
    assert page.imgs
    for src in page.imgs:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    for link in page.links:
        assert not link.lower().startswith(("http:", "https:", "//")), link
        assert link.startswith(("data:", "#")), link
    return page


def test_report_table_is_the_index_with_embedded_figures_and_no_external_url(tmp_path):
    d = mixed_sweep(tmp_path / "s")
    r = script("report.py", d, "-o", tmp_path / "r.html")
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout
    page = check_page(tmp_path / "r.html", d)
    assert len(page.imgs) >= 2  # loss against k and the bound (no simulated time in these runs)
    text = (tmp_path / "r.html").read_text()
    # the warnings: the failed run with its log line, the diverged run, γ > 1/L, the grid edges
    assert "rfailed" in text and "out of memory estimate" in text
    assert "1 run diverged" in text and "3 runs have γ &gt; 1/L" in text
    assert "largest step size of the grid" in text or "smallest step size of the grid" in text
    assert "pipedream (δ = 72)" in text  # the method's δ in the page's heading line


def test_report_defaults_to_the_sweep_folder_and_refuses_a_non_sweep(tmp_path):
    d = mixed_sweep(tmp_path / "s")
    assert script("report.py", d).returncode == 0
    assert os.path.getsize(os.path.join(d, "report.html")) > 0
    r = script("report.py", tmp_path / "nothing")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "index.csv" in r.stderr


def test_report_without_matplotlib_is_one_line(tmp_path):
    fake = tmp_path / "fake" / "matplotlib"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    r = subprocess.run(["python3", os.path.join(ROOT, "scripts", "report.py"), str(tmp_path)], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(tmp_path / "fake")})
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "matplotlib" in r.stderr and "pip install matplotlib" in r.stderr


def test_stale_report_runs_the_python_report(stale_bin, binary_sweep):
    if "report" not in subprocess.run([stale_bin, "--help"], capture_output=True, text=True).stdout:
        pytest.skip(f"{stale_bin} has no report command (built before it)")
    out = binary_sweep / "page.html"
    r = subprocess.run([stale_bin, "report", str(binary_sweep / "out"), "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    page = check_page(out, binary_sweep / "out")
    # loss against k, against simulated time (pipedream's panel), every configuration at its chosen γ, the bound
    assert len(page.imgs) == 4
    text = out.read_text()
    # issue 51, item 7: the methods compared at their chosen step sizes; every table in a box that
    # scrolls sideways (the bound's table was wider than the page)
    assert 'id="chosen"' in text and "every configuration at its chosen step size" in text
    assert text.count("<table") == text.count('<div class="scroll"><table') >= 3
    assert "pipedream (δ = " in text and "rpd (δ = 4)" in text
    assert 'base = &quot;base.toml&quot;' in text or "base = &quot;base.toml&quot;" in text  # the sweep file as stored
    # no Python: one line naming what to do
    r = subprocess.run([stale_bin, "report", str(binary_sweep / "out")], capture_output=True, text=True,
                       env={**os.environ, "STALE_PYTHON": "/nonexistent/python3"})
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "STALE_PYTHON" in r.stderr
    r = subprocess.run([stale_bin, "report", str(binary_sweep)], capture_output=True, text=True)
    assert r.returncode == 2 and "index.csv" in r.stderr


def test_headless_chromium_renders_the_report(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium not installed (apt-get install -y chromium)")
    d = mixed_sweep(tmp_path / "s")
    assert script("report.py", d, "-o", tmp_path / "r.html").returncode == 0
    shot = tmp_path / "shot.png"
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                        "--window-size=1200,3000", f"--screenshot={shot}", f"file://{tmp_path / 'r.html'}"],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20000  # a rendered page, not a blank one


def test_a_diverged_curve_does_not_set_the_panels_y_range():
    """issue 51, item 7: one diverged curve (climbing to 1e300) flattened every other curve of its
    panel; the y range now comes from the curves that did not diverge"""
    import numpy as np
    from stale_analysis.report import panel_title, y_limits
    ok = np.array([1.0, 0.5, 0.1])
    assert y_limits([(ok, False), (np.array([1.0, 1e150, np.inf]), True)]) == (0.05, 2.0)
    assert y_limits([(np.array([np.nan]), True)]) is None
    long = tuple((f"method.some_long_key_{i}", "value") for i in range(4))
    assert all(len(line) <= 48 for line in panel_title(long, 48).split("\n")) and "\n" in panel_title(long, 48)
