"""The status page of ``ddlsched serve``: one self-contained document that embeds the overview
inertly. In headless Chromium it renders its tables, Gantt strip and utilisation line from the
embedded data with every command as text (file://, so no fetch), and, served over loopback HTTP
by a stand-in service, refreshes from ``api/overview`` with the URL's bearer token, keeping the
last data and saying "disconnected" when a fetch fails. Chromium runs in its own process group,
bounded in time, and nothing of it may outlive a test."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread
from test_report_browser import CHROMIUM, REQUIRED

from ddlsched.live.service.page import status_page

EVIL = "</script><script>alert(1)</script>"


def overview() -> dict:
    """A realistic overview: 4 GPUs, 2 queued, 2 running (one on two GPUs), 3 finished."""
    return {
        "now": 400.0,
        "origin": 1790000000.0,
        "service": {
            "policy": "fifo",
            "cluster": "lab",
            "gpus": 4,
            "draining": True,
            "version": "1",
        },
        "queue": [
            {
                "id": 6,
                "gpus": 2,
                "command": "python3 <b>x</b>.py",
                "submitted": 100.0,
                "failures": 0,
            },
            {"id": 7, "gpus": 1, "command": EVIL, "submitted": 350.0, "failures": 2},
        ],
        "running": [
            {
                "id": 4,
                "gpus": 2,
                "gpus_held": [0, 1],
                "since": 120.0,
                "attempt": 1,
                "command": "a",
                "step": 12,
            },
            {
                "id": 5,
                "gpus": 1,
                "gpus_held": [3],
                "since": 300.0,
                "attempt": 0,
                "command": "b",
                "step": None,
            },
        ],
        "finished": [
            {
                "id": 1,
                "state": "finished",
                "submitted": 0.0,
                "ended": 50.0,
                "jct": 50.0,
                "reason": None,
            },
            {
                "id": 2,
                "state": "failed",
                "submitted": 0.0,
                "ended": 90.5,
                "jct": 90.5,
                "reason": "exit status 1",
            },
            {
                "id": 3,
                "state": "cancelled",
                "submitted": 10.0,
                "ended": 3700.0,
                "jct": 3690.0,
                "reason": "cancelled by user",
            },
        ],
        "segments": [
            {"job": 1, "gpus": [0], "start": 0.0, "end": 50.0},
            {"job": 2, "gpus": [1, 2], "start": 5.0, "end": 90.5},
            {"job": 4, "gpus": [2], "start": 60.0, "end": 100.0},  # a first attempt, preempted
            {"job": 4, "gpus": [0, 1], "start": 120.0, "end": None},
            {"job": 5, "gpus": [3], "start": 300.0, "end": None},
        ],
        "utilisation": [
            [0.0, 0.25],
            [5.0, 0.75],
            [50.0, 0.5],
            [90.5, 0.25],
            [100.0, 0.0],
            [120.0, 0.5],
            [300.0, 0.75],
        ],
    }


def embedded(html: str) -> str:
    """The text of the ``<script id="initial">`` element (the first ``</script>`` closes it)."""
    found = re.search(r'<script type="application/json" id="initial">(.*?)</script>', html, re.S)
    assert found, html[:500]
    return found.group(1)


def test_one_self_contained_document() -> None:
    html = status_page(overview())
    assert html.startswith("<!DOCTYPE html>") and html.count("<html") == 1
    assert html.rstrip().endswith("</html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    # the only URL is SVG's namespace name, which is never fetched
    assert set(re.findall(r"https?://[^\s\"'<>]+", html)) == {"http://www.w3.org/2000/svg"}
    assert "<link" not in html and "@import" not in html
    for anchor in ('id="queue"', 'id="gantt"', 'id="finished"', 'id="utilisation"', 'id="summary"'):
        assert html.count(anchor) == 1, anchor


def test_the_overview_is_embedded_inert() -> None:
    data = overview()
    html = status_page(data)
    text = embedded(html)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == data  # the escapes are JSON's own: nothing to reverse
    # the evil command neither closed the JSON script nor added one
    assert html.count("<script") == 2 and html.count("</script>") == 2
    assert "alert(1)</script>" not in html


def test_no_overview_is_an_empty_page() -> None:
    html = status_page()
    assert embedded(html) == "null"
    assert 'data-refresh="2.0"' in html
    assert 'data-refresh="0.5"' in status_page(None, refresh_s=0.5)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "2"])
def test_a_bad_refresh_is_refused(bad) -> None:
    with pytest.raises(ValueError, match="refresh_s"):
        status_page(None, refresh_s=bad)


# --- in headless Chromium ------------------------------------------------------------------

browser = pytest.mark.skipif(
    CHROMIUM is None and not REQUIRED, reason="Chromium not installed (see test_report_browser)"
)


def chromium(profile: Path, *args: str, timeout: float = 120.0) -> str:
    """Run headless Chromium in its own process group and return its stdout; the whole group is
    ended on a timeout, and none of it may outlive the call."""
    assert CHROMIUM is not None, "DDLSCHED_REQUIRE_CHROMIUM is set but Chromium is missing"
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        f"--user-data-dir={profile}",
        *args,
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        raise
    finally:
        left = _group_left(proc.pid)
        if left:
            os.killpg(proc.pid, signal.SIGKILL)
    assert not left, f"Chromium left processes behind: {left}"
    assert proc.returncode == 0, err[-2000:]
    return out


def _group_left(pgid: int, wait_s: float = 10.0) -> list[int]:
    """The live (not zombie) processes of the group once it had ``wait_s`` to wind down; read
    from ``/proc``, as an exited Chromium's children linger a moment as zombies of init."""
    deadline = time.monotonic() + wait_s
    while True:
        left = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # ended while we looked
            if int(fields[2]) == pgid and fields[0] != "Z":
                left.append(int(stat.parent.name))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


@pytest.fixture
def page(tmp_path: Path) -> Path:
    path = tmp_path / "status.html"
    path.write_text(status_page(overview()), encoding="utf-8")
    return path


def rows(dom: str, table: str) -> list[str]:
    """The ``data-job`` values of a table's rows, in order."""
    found = re.search(rf'<table id="{table}">(.*?)</table>', dom, re.S)
    assert found, table
    return re.findall(r'<tr[^>]*data-job="([^"]*)"', found.group(1))


@browser
def test_the_page_renders_in_chromium(page: Path, tmp_path: Path) -> None:
    dom = chromium(tmp_path / "profile", "--virtual-time-budget=3000", "--dump-dom", page.as_uri())
    assert rows(dom, "queue") == ["6", "7"]
    assert rows(dom, "running") == ["4", "5"]
    assert rows(dom, "finished") == ["1", "2", "3"]
    assert re.search(r'<tr data-job="2" class="failed">', dom)
    assert "1 h 01 min" in dom and "50 s" in dom  # JCTs formatted for a reader
    assert "5 min 00 s" in dom  # job 6 has waited 300 s
    # the Gantt strip: one rect per segment and GPU, within the window [0, now]
    gantt = re.search(r'<svg id="gantt".*?</svg>', dom, re.S).group(0)
    rects = re.findall(r"<rect [^>]*>", gantt)
    placed = sorted(
        (re.search(r'data-job="(\d+)"', r).group(1), re.search(r'data-gpu="(\d+)"', r).group(1))
        for r in rects
    )
    assert placed == [
        ("1", "0"),
        ("2", "1"),
        ("2", "2"),
        ("4", "0"),
        ("4", "1"),
        ("4", "2"),
        ("5", "3"),
    ]
    assert all(float(re.search(r'width="([\d.]+)"', r).group(1)) > 0 for r in rects)
    assert [f">GPU {g}<" in gantt for g in range(4)] == [True] * 4
    util = re.search(r'<svg id="utilisation".*?</svg>', dom, re.S).group(0)
    assert re.search(r'<path d="M[^"]+ H[^"]+ V', util)
    summary = re.search(r'<header id="summary">.*?</header>', dom, re.S).group(0)
    assert "policy: fifo" in summary and "4 GPUs" in summary and "cluster: lab" in summary
    assert re.search(r'id="s-draining" class="badge">draining', summary)  # not hidden
    assert "2026-09-21 14:20:00 UTC" in summary  # origin + now
    # user commands are text, never markup
    assert "python3 &lt;b&gt;x&lt;/b&gt;.py" in dom and "<b>" not in dom
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert dom.count("<script") == 2
    assert '<span id="conn" hidden="">disconnected</span>' in dom  # no fetch on file://


@browser
def test_the_gantt_strip_shows_only_its_window(tmp_path: Path) -> None:
    """With a 100 s window ending at now = 400, closed segments before 300 are gone and the open
    ones start at the strip's left edge."""
    path = tmp_path / "window.html"
    path.write_text(status_page(overview(), window_s=100.0), encoding="utf-8")
    dom = chromium(tmp_path / "profile", "--virtual-time-budget=2000", "--dump-dom", path.as_uri())
    gantt = re.search(r'<svg id="gantt".*?</svg>', dom, re.S).group(0)
    rects = re.findall(r'<rect x="([\d.]+)"[^>]*data-job="(\d+)" data-gpu="(\d+)"', gantt)
    assert sorted(rects) == [("60.0", "4", "0"), ("60.0", "4", "1"), ("60.0", "5", "3")]
    assert "(last 1 min 40 s)" in dom


@browser
def test_an_empty_page_renders(tmp_path: Path) -> None:
    path = tmp_path / "empty.html"
    path.write_text(status_page(None), encoding="utf-8")
    dom = chromium(tmp_path / "profile", "--virtual-time-budget=2000", "--dump-dom", path.as_uri())
    assert "no data yet" in dom
    assert rows(dom, "queue") == [] and 'id="gantt"' in dom


@browser
def test_the_screenshot_is_a_picture(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "shot.png"
    chromium(
        tmp_path / "profile",
        "--virtual-time-budget=3000",
        f"--screenshot={shot}",
        "--window-size=1200,900",
        "--hide-scrollbars",
        page.as_uri(),
    )
    assert shot.is_file() and shot.stat().st_size > 10_000
    image = imread(shot)
    assert image.shape[:2] == (900, 1200)
    colours = np.unique((image[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 20  # text, rects in several hues, the line: far from one flat colour
