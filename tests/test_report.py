"""Plots and HTML reports (issue #6): loading result directories, shared/contended intervals on
a hand-made run, confidence intervals by hand, the ``plot``/``report`` commands, determinism."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from _report_runs import write_run

from ddlsched.cli import main
from ddlsched.errors import InputError
from ddlsched.report import build_report, find_runs, load_run, load_runs, plot_runs, write_report
from ddlsched.report.figures import (
    figure_bytes,
    gantt,
    gantt_view,
    jct_cdf,
    policy_bars,
    queue_cdf,
    utilisation,
)
from ddlsched.report.intervals import (
    busy_gpus,
    contended_intervals,
    contended_server_intervals,
    cross_server_segments,
    overlap_intervals,
    shared_intervals,
    utilisation_series,
)
from ddlsched.report.load import group_labels, parse_gpu_label
from ddlsched.report.plot import parse_kinds, parse_window


@pytest.fixture
def hand_run(tmp_path: Path):
    return load_run(write_run(tmp_path / "run"))


def row(run, label: str) -> int:
    return run.gpus.labels.index(label)


# ---------------------------------------------------------------------- loading
def test_load_run_reads_arrays_and_every_cluster_gpu(hand_run) -> None:
    assert hand_run.num_gpus == 8  # the tiny cluster: idle GPUs 0:3.. are rows too
    assert hand_run.gpus.labels == ("0:0", "0:1", "0:2", "0:3", "1:0", "1:1", "1:2", "1:3")
    assert list(hand_run.gpus.server) == [0, 0, 0, 0, 1, 1, 1, 1]
    assert list(hand_run.seg_job) == [1, 2, 3, 5, 4, 6]
    assert list(hand_run.jct) == [10, 15, 20, 12, 30, 50]
    assert list(hand_run.queueing) == [0, 5, 8, 10, 20, 40]
    # segment 2 (job 3) holds 0:2 and 1:1
    assert [hand_run.gpus.labels[i] for i in hand_run.seg_rows[2 * 2 : 2 * 2 + 2]] == [
        "0:2",
        "1:1",
    ]


def test_without_a_known_cluster_the_rows_are_the_gpus_seen(tmp_path: Path) -> None:
    run = load_run(write_run(tmp_path / "r", cluster=None))
    assert run.gpus.labels == ("0:0", "0:1", "0:2", "0:3", "1:0", "1:1", "1:3")
    assert run.num_gpus == 7


def test_gpu_labels_parse_by_number_not_text() -> None:
    assert parse_gpu_label("10:2") == (10, 2)
    assert sorted(["10:0", "2:1", "2:0"], key=parse_gpu_label) == ["2:0", "2:1", "10:0"]
    with pytest.raises(ValueError):
        parse_gpu_label("gpu3")


def test_sweep_layout_is_found_recursively_and_grouped_by_policy(tmp_path: Path) -> None:
    for i, (policy, seed) in enumerate([("a", 0), ("a", 1), ("b", 0), ("b", 1)]):
        write_run(tmp_path / "sweep" / "runs" / f"h{i}", policy=policy, seed=seed)
    (tmp_path / "sweep" / "summary.csv").write_text("x\n")
    found = find_runs([tmp_path / "sweep"])
    assert [p.name for p in found] == ["h0", "h1", "h2", "h3"]
    runs = load_runs([tmp_path / "sweep"])
    assert [r.label for r in runs] == ["a", "a", "b", "b"]
    assert [r.seed for r in runs] == [0, 1, 0, 1]


def test_runs_keep_argument_order_and_sort_within_a_folder(tmp_path: Path) -> None:
    write_run(tmp_path / "sweep" / "runs" / "h1", policy="zeta", seed=1)
    write_run(tmp_path / "sweep" / "runs" / "h2", policy="alpha", seed=1)
    write_run(tmp_path / "sweep" / "runs" / "h3", policy="alpha", seed=0)
    single = write_run(tmp_path / "single", policy="mid")
    runs = load_runs([single, tmp_path / "sweep"])
    assert [(r.label, r.seed) for r in runs] == [
        ("mid", 0),
        ("alpha", 0),
        ("alpha", 1),
        ("zeta", 1),
    ]


def test_group_labels_name_what_varies_except_the_seed() -> None:
    configs = [
        {"policy": "x", "seed": 0, "cluster": "c", "settings": {"kappa": 1}},
        {"policy": "x", "seed": 1, "cluster": "c", "settings": {"kappa": 2}},
        {"policy": "y", "seed": 0, "cluster": "c", "settings": {"kappa": 1}},
    ]
    assert group_labels(configs) == ["x kappa=1", "x kappa=2", "y kappa=1"]
    assert group_labels([{"policy": "x", "seed": 0}, {"policy": "x", "seed": 5}]) == ["x", "x"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing", "no such directory"),
        (lambda p: (p / "f.txt").write_text("x") and p / "f.txt", "not a directory"),
        (lambda p: (p / "empty").mkdir() or p / "empty", "not a result directory"),
    ],
)
def test_bad_directories_name_the_path(tmp_path: Path, make, message) -> None:
    path = make(tmp_path)
    with pytest.raises(InputError, match=message) as e:
        load_runs([path])
    assert e.value.source == str(path)


def test_bad_gpu_label_names_file_line_and_field(tmp_path: Path) -> None:
    d = write_run(tmp_path / "r", segments=[(1, 0, 1, "0:0"), (2, 0, 1, "gpu7")])
    with pytest.raises(InputError, match="gpu7") as e:
        load_run(d)
    assert (e.value.source, e.value.line, e.value.field) == (
        str(d / "segments.csv"),
        3,
        "placement",
    )


def test_bad_number_and_missing_column_are_input_errors(tmp_path: Path) -> None:
    d = write_run(tmp_path / "r")
    text = (d / "jobs.csv").read_text().replace("1,0,0,10,10", "1,0,0,ten,10")
    (d / "jobs.csv").write_text(text)
    with pytest.raises(InputError) as e:
        load_run(d)
    assert (e.value.line, e.value.field) == (2, "finish")
    (d / "jobs.csv").write_text("job_id,arrival\n1,0\n")
    with pytest.raises(InputError, match="missing column"):
        load_run(d)
    (d / "summary.json").write_text("{oops")
    with pytest.raises(InputError, match="not valid JSON"):
        load_run(d)


# ---------------------------------------------------------------------- intervals
def test_shared_gpu_is_the_overlap_on_that_gpu_only(hand_run) -> None:
    shared = shared_intervals(hand_run)
    assert list(shared.key) == [row(hand_run, "0:1")]
    assert shared.of(row(hand_run, "0:1")) == [(5.0, 10.0)]
    # job 5 starts on 0:0 exactly when job 1 ends: touching is not sharing
    assert shared.of(row(hand_run, "0:0")) == []


def test_contention_needs_two_cross_server_jobs_on_a_server(hand_run) -> None:
    assert list(cross_server_segments(hand_run)) == [False, True, True, False, False, True]
    servers = contended_server_intervals(hand_run)
    assert servers.of(0) == [(8.0, 15.0)] and servers.of(1) == [(8.0, 15.0)]
    gpus = contended_intervals(hand_run)
    marked = {hand_run.gpus.labels[k]: gpus.of(k) for k in sorted(set(gpus.key.tolist()))}
    # the GPUs of jobs 2 and 3, while both run; not job 1's 0:0 (one server), not job 6 (alone)
    assert marked == {lab: [(8.0, 15.0)] for lab in ("0:1", "0:2", "1:0", "1:1")}


def test_overlap_intervals_threshold_and_touching_merge() -> None:
    iv = overlap_intervals(
        np.array([0, 0, 0, 1]), np.array([0.0, 2.0, 3.0, 0.0]), np.array([4.0, 3.0, 5.0, 1.0]), 2
    )
    assert iv.of(0) == [(2.0, 5.0 - 1.0)] and iv.of(1) == []
    busy = overlap_intervals(np.array([0, 0]), np.array([0.0, 1.0]), np.array([1.0, 2.0]), 1)
    assert busy.of(0) == [(0.0, 2.0)]  # [0,1) and [1,2) touch: one busy interval


def test_busy_gpu_step_function_by_hand(hand_run) -> None:
    t, n = busy_gpus(hand_run)
    assert list(t) == [0, 5, 8, 12, 15, 20, 30, 40, 50]
    assert list(n) == [2, 3, 5, 4, 2, 1, 0, 2, 0]


def test_binned_utilisation_keeps_the_gpu_seconds(hand_run) -> None:
    t, n = busy_gpus(hand_run)
    exact = float(np.sum(n[:-1] * np.diff(t))) / hand_run.num_gpus
    bt, bu = utilisation_series(hand_run, max_points=5)
    assert len(bt) == 5
    width = (t[-1] - t[0]) / 5
    assert float(np.sum(bu) * width) == pytest.approx(exact)


def test_gantt_is_bounded_for_big_runs(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    segs = []
    for j in range(20000):
        a = float(rng.uniform(0, 1e6))
        srv = int(rng.integers(0, 50))
        segs.append((j, a, a + 500.0, f"{srv}:{int(rng.integers(0, 8))}"))
    run = load_run(write_run(tmp_path / "big", segments=segs, cluster=None))
    view = gantt_view(run, max_gpus=64, max_bars=1000)
    assert len(view.rows) == 64 and view.truncated_rows and view.truncated_time
    row_idx = np.repeat(np.arange(len(run.seg_ptr) - 1), np.diff(run.seg_ptr))
    rows = run.seg_rows
    inside = (rows < 64) & (run.seg_start[row_idx] < view.t1)
    assert inside.sum() <= 1000
    fig = gantt(run, max_gpus=64, max_bars=1000)
    assert len(fig.axes[0].collections) >= 1
    explicit = gantt_view(run, window=(100.0, 200.0))
    assert (explicit.t0, explicit.t1, explicit.truncated_time) == (100.0, 200.0, False)


# ---------------------------------------------------------------------- CIs and HTML
def three_seeds(tmp_path: Path) -> Path:
    for seed, jct in enumerate([10.0, 20.0, 30.0]):
        write_run(tmp_path / "s" / f"seed{seed}", seed=seed, summary={"avg_jct": jct})
    write_run(tmp_path / "s" / "other", policy="sjf", summary={"avg_jct": 5.0})
    return tmp_path / "s"


def test_report_table_has_t_confidence_intervals_by_hand(tmp_path: Path) -> None:
    runs = load_runs([three_seeds(tmp_path)])
    text = build_report(runs, "T")
    # mean 20, s = 10, n = 3: half-width t(0.975, 2) · 10 / √3 = 4.3027 · 5.7735 = 24.84
    half = 4.302652729911275 * 10 / math.sqrt(3)
    assert f"20.0 ± {half:.1f}" in text and "24.8" in text
    assert re.search(r"<td>fifo</td><td>3</td>", text)
    assert re.search(r"<td>sjf</td><td>1</td>", text)
    # per-run table: shared and contended GPU-seconds of the hand-made run (5 s; 4 GPUs × 7 s)
    assert "<td>5.0</td><td>28.0</td>" in text


def test_bar_chart_error_bars_are_the_ci(tmp_path: Path) -> None:
    fig = policy_bars(load_runs([three_seeds(tmp_path)]), metrics=["avg_jct"])
    ax = fig.axes[0]
    heights = [p.get_height() for p in ax.patches]
    assert heights == pytest.approx([20.0, 5.0])  # groups by label: fifo, sjf
    # the error bar of the fifo bar spans the CI; sjf's single run has a zero-width one
    segs = ax.collections[0].get_segments()
    half = 4.302652729911275 * 10 / math.sqrt(3)
    # 20 − half < 0: a time's interval is clipped at 0 (issue #11)
    assert sorted(segs[0][:, 1]) == pytest.approx([0.0, 20.0 + half])
    assert sorted(segs[1][:, 1]) == pytest.approx([5.0, 5.0])


def test_report_is_self_contained(tmp_path: Path) -> None:
    out = write_report([three_seeds(tmp_path)], tmp_path / "r.html", title="My <report>")
    text = out.read_text()
    assert "<title>My &lt;report&gt;</title>" in text
    assert "http://" not in text and "https://" not in text
    assert "<link" not in text and "url(" not in text
    srcs = re.findall(r'src="([^"]*)"', text)
    assert len(srcs) == 6  # bars, JCT CDF, queue CDF, utilisation, 2 Gantt charts (2 groups)
    assert all(s.startswith("data:image/png;base64,") for s in srcs)


@pytest.mark.long
def test_report_and_figures_are_byte_identical_across_renders(tmp_path: Path) -> None:
    d = three_seeds(tmp_path)
    a = write_report([d], tmp_path / "a.html").read_bytes()
    b = write_report([d], tmp_path / "b.html").read_bytes()
    assert a == b
    runs = load_runs([d])
    for make in (jct_cdf, queue_cdf, utilisation, policy_bars, lambda rs: gantt(rs[0])):
        for fmt in ("png", "svg", "pdf"):
            assert figure_bytes(make(runs), fmt) == figure_bytes(make(runs), fmt)


# ---------------------------------------------------------------------- CLI
def test_cli_plot_and_report_on_a_real_run(tmp_path: Path, capsys) -> None:
    wl = tmp_path / "jobs.csv"
    wl.write_text(
        "job_id,arrival,num_gpus,iterations,model\n"
        "1,0,2,200,resnet50\n2,1,4,100,vgg16\n3,2.5,1,300,lstm-ptb\n4,3,8,50,inception3\n"
    )
    for policy in ("ada-srsf", "srsf1"):
        args = ["run", "--cluster", "tiny", "--workload", str(wl), "--policy", policy]
        assert main([*args, "--quiet", "--out", str(tmp_path / "runs" / policy)]) == 0
    plots = tmp_path / "plots"
    assert main(["plot", str(tmp_path / "runs"), "--out", str(plots)]) == 0
    names = sorted(p.name for p in plots.iterdir())
    assert names == [
        "bars.png",
        "gantt-ada-srsf.png",
        "gantt-srsf1.png",
        "jct-cdf.png",
        "queue-cdf.png",
        "rho-cdf.png",
        "util.png",
    ]
    assert all((plots / n).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for n in names)
    assert main(["plot", str(tmp_path / "runs" / "srsf1"), "--out", str(plots / "svg"),
                 "--kind", "gantt,util", "--format", "svg", "--window", "0:100"]) == 0  # fmt: skip
    assert sorted(p.name for p in (plots / "svg").iterdir()) == ["gantt.svg", "util.svg"]
    html = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "runs"), "--out", str(html), "--title", "Tiny"]) == 0
    text = html.read_text()
    assert "<h1>Tiny</h1>" in text and text.count("<img ") == 7  # with the ρ CDF
    capsys.readouterr()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plot", "{missing}", "--out", "{tmp}/p"], "no such directory"),
        (["report", "{tmp}", "--out", "{tmp}/r.html"], "not a result directory"),
        (["plot", "{run}", "--out", "{tmp}/p", "--kind", "gant"], "did you mean 'gantt'"),
        (["plot", "{run}", "--out", "{tmp}/p", "--format", "jpg"], "unknown format"),
        (["plot", "{run}", "--out", "{tmp}/p", "--window", "5:1"], "START:END"),
    ],
)
def test_cli_errors_are_one_line_exit_2(tmp_path: Path, capsys, argv, message) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    run = write_run(tmp_path / "run")
    subs = {"{missing}": str(tmp_path / "nope"), "{tmp}": str(empty), "{run}": str(run)}
    argv = [subs.get(a, a.replace("{tmp}", str(empty))) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_run_without_jobs_still_renders(tmp_path: Path) -> None:
    d = write_run(tmp_path / "empty", segments=[])
    run = load_run(d)
    assert len(run.jct) == 0 and run.num_gpus == 8
    assert len(shared_intervals(run)) == 0 and len(contended_intervals(run)) == 0
    text = build_report([run], "empty")
    assert text.count("<img ") == 5


def test_parse_kinds_and_window() -> None:
    with pytest.raises(InputError, match="no result directory"):
        load_runs([])
    assert parse_kinds(None) == [
        "jct-cdf",
        "queue-cdf",
        "util",
        "gantt",
        "bars",
        "rho-cdf",
        "queues",
    ]
    assert parse_kinds("gantt, bars,gantt") == ["gantt", "bars"]
    assert parse_window("10:20.5") == (10.0, 20.5)
    with pytest.raises(InputError):
        parse_window("abc")


def test_plot_runs_library_call(tmp_path: Path) -> None:
    paths = plot_runs([write_run(tmp_path / "r")], tmp_path / "o", kinds=["gantt"], fmt="pdf")
    assert [p.name for p in paths] == ["gantt.pdf"]
    assert paths[0].read_bytes().startswith(b"%PDF")


def test_rho_cdf_from_fairness_csv(tmp_path: Path) -> None:
    run = tmp_path / "run"
    argv = ["run", "--cluster", "luo24", "--workload", "luo24-40", "--policy", "fifo"]
    assert main([*argv, "--quiet", "--out", str(run)]) == 0
    r = load_run(run)
    # ρ per job, in fairness.csv order
    want = [float(x.split(",")[-1]) for x in (run / "fairness.csv").read_text().split()[1:]]
    assert r.rho.tolist() == want and len(want) == 40
    (path,) = plot_runs([run], tmp_path / "f", kinds=["rho-cdf"])
    assert path.name == "rho-cdf.png" and path.stat().st_size > 0
    assert "rho-cdf" in build_report(load_runs([run]))
    # a run without fairness.csv: every kind by default skips it, naming it is an error
    (run / "fairness.csv").unlink()
    assert not any(p.name.startswith("rho") for p in plot_runs([run], tmp_path / "g"))
    with pytest.raises(InputError, match="no run has fairness.csv"):
        plot_runs([run], tmp_path / "h", kinds=["rho-cdf"])
    assert "rho-cdf" not in build_report(load_runs([run]))
