"""The HTML report in a real browser: headless Chromium opens the file (no server) and every
embedded figure decodes. ``make test`` installs Debian's ``chromium`` when it is missing; the
test skips only where no Chromium could be installed (and fails then too if
``DDLSCHED_REQUIRE_CHROMIUM=1``)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from _report_runs import write_run

from ddlsched.report import write_report


def find_chromium() -> str | None:
    """Chromium's executable: ``$CHROMIUM``, Debian's ``/usr/bin/chromium`` or one on PATH."""
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium"):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


CHROMIUM = find_chromium()
# where the browser test must run (e.g. CI), a missing Chromium is a failure, not a skip
REQUIRED = os.environ.get("DDLSCHED_REQUIRE_CHROMIUM", "") not in ("", "0")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not REQUIRED,
    reason="Chromium not installed: `make test` installs it (apt-get install chromium, as root)",
)


def dump_dom(html: Path, profile: Path) -> str:
    """The page's DOM after load, as headless Chromium serialises it."""
    assert CHROMIUM is not None, "DDLSCHED_REQUIRE_CHROMIUM is set but Chromium is missing"
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        html.resolve().as_uri(),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def image_counts(dom: str) -> tuple[int, int]:
    """(loaded, broken) images, as the report's inline script recorded them on ``<body>``."""
    body = re.search(r"<body[^>]*>", dom)
    assert body, dom[:500]
    loaded = re.search(r'data-images-loaded="(\d+)"', body.group(0))
    broken = re.search(r'data-images-broken="(\d+)"', body.group(0))
    assert loaded and broken, f"the report's load script did not run: {body.group(0)}"
    return int(loaded.group(1)), int(broken.group(1))


@pytest.fixture
def report(tmp_path: Path) -> Path:
    for seed in range(2):
        write_run(tmp_path / "runs" / f"fifo-{seed}", seed=seed)
    write_run(tmp_path / "runs" / "sjf", policy="sjf")
    return write_report([tmp_path / "runs"], tmp_path / "report.html", title="Browser test")


def test_every_figure_loads_in_chromium(report: Path, tmp_path: Path) -> None:
    dom = dump_dom(report, tmp_path / "profile")
    assert "<h1>Browser test</h1>" in dom
    # bars, JCT CDF, queueing CDF, utilisation, one Gantt chart per group (fifo, sjf)
    assert len(re.findall(r"<img ", dom)) == 6
    assert image_counts(dom) == (6, 0)


def test_a_broken_image_is_detected(report: Path, tmp_path: Path) -> None:
    """The check can fail: corrupt one embedded PNG and Chromium reports it broken."""
    text = report.read_text()
    broken = tmp_path / "broken.html"
    broken.write_text(text.replace("data:image/png;base64,iVBOR", "data:image/png;base64,AAAA", 1))
    assert image_counts(dump_dom(broken, tmp_path / "profile")) == (5, 1)
