"""The report renders in a real headless browser (Debian's chromium), plots included."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from synthetic_run import build_run

from spadegym.report import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install -y --no-install-recommends chromium)"
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    # The page is a file and needs no network; Chromium's own calls home (time, accounts, search) go to a closed
    # local port instead of the tests' outbound guard, so no host but this one is ever tried.
    "--proxy-server=http://127.0.0.1:9",
    "--host-resolver-rules=MAP * ~NOTFOUND",
)


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=90,
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("browser") / "run"
    build_run(run_dir, rounds=4).close()
    return write_report(run_dir)


def test_browser_renders_the_page_with_its_plots_and_headings(report, tmp_path):
    proc = _chromium(tmp_path, "--dump-dom", report.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert "<title>spadegym report: run</title>" in dom
    headings = re.findall(r"<h2>(.*?)</h2>", dom)
    assert headings[:3] == ["Overview", "Learning", "Regret and designer reward"]
    assert "Environment browser" in headings
    images = re.findall(r'<img [^>]*src="data:image/png;base64,', dom)
    assert len(images) >= 12
    assert len(re.findall(r"<details class=\"env\">", dom)) == 16


def test_browser_screenshot_shows_the_plots(report, tmp_path):
    from PIL import Image

    shot = tmp_path / "report.png"
    proc = _chromium(tmp_path, "--window-size=1400,1800", f"--screenshot={shot}", report.as_uri())
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    assert image.size == (1400, 1800)
    # matplotlib's default blue and orange lines only exist on the page if the PNG plots were decoded and drawn.
    colours = image.getcolors(maxcolors=1 << 20)
    near = {name: 0 for name in ("blue", "orange")}
    for count, (r, g, b) in colours:
        if abs(r - 31) < 20 and abs(g - 119) < 20 and abs(b - 180) < 20:
            near["blue"] += count
        if abs(r - 255) < 20 and abs(g - 127) < 20 and abs(b - 14) < 25:
            near["orange"] += count
    assert near["blue"] > 200 and near["orange"] > 200, near


def test_browser_runs_the_filter_script_under_the_pages_policy(report, tmp_path):
    """The CSP allows the one script by its hash: it shows the filter box, and #filter=WORDS filters the levels."""
    proc = _chromium(tmp_path, "--dump-dom", report.as_uri() + "#filter=maze")
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert re.search(r'<input id="env-filter" type="search" placeholder="[^"]*">', dom)  # no longer hidden
    groups = dict(re.findall(r'<details class="family"([^>]*)><summary>([^ <]+) ', dom)[i][::-1]
                  for i in range(3))
    assert groups["maze"] == ' open=""' and groups["arith"] == groups["sequence"] == ' hidden=""', groups
    assert re.search(r'<span id="env-shown">[1-9]\d*</span>', dom)
