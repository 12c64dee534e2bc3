"""Live mode where Ray cannot be imported (the default install, `make run`): ``--cluster``
runs the jobs as local subprocesses with one note line; ``--ray-address`` is a one-line error
naming ``pip install 'ddlsched[ray]'``. Ray is hidden with ``sys.modules['ray'] = None``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ddlsched.cli import main
from ddlsched.core.cluster import Cluster
from ddlsched.errors import InputError
from ddlsched.live import run as live_run
from ddlsched.live.launchers.local import LocalLauncher
from ddlsched.live.service import server as live_service

NOTE = (
    "ddlsched: note: Ray is not installed; running the jobs as local subprocesses "
    "(pip install 'ddlsched[ray]' for Ray)\n"
)


@pytest.fixture
def no_ray(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError(name="ray")
    return monkeypatch


def _inputs(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "cluster.toml").write_text('name = "one"\n[[servers]]\nnum_gpus = 1\n')
    cmd = json.dumps([sys.executable, "-c", "pass"])
    (tmp_path / "jobs.toml").write_text(
        f"[[jobs]]\njob_id = 0\narrival = 0\ngpus = 1\ncommand = {cmd}\n"
    )
    return tmp_path / "cluster.toml", tmp_path / "jobs.toml"


def test_the_launcher_factory_falls_back_to_local_subprocesses(no_ray, capsys) -> None:
    assert live_run.ray_missing() == "Ray is not installed"
    assert live_run.resolve_launcher("ray", None) == "local"
    assert capsys.readouterr().err == NOTE
    launcher = live_run.make_launcher("ray", None, Cluster.homogeneous(1, 2))
    try:
        assert isinstance(launcher, LocalLauncher)
    finally:
        launcher.shutdown()
    assert capsys.readouterr().err == NOTE
    assert live_run.resolve_launcher("local", None) == "local"  # asked for: no note
    assert capsys.readouterr().err == ""


def test_a_ray_address_without_ray_is_one_line_naming_the_extra(no_ray) -> None:
    with pytest.raises(InputError, match=r"--ray-address needs Ray: Ray is not installed") as e:
        live_run.make_launcher("ray", "10.0.0.1:6379", None)
    assert "pip install 'ddlsched[ray]'" in str(e.value) and "\n" not in str(e.value)


def test_with_ray_the_launcher_stays_ray(capsys) -> None:
    pytest.importorskip("ray")
    assert live_run.resolve_launcher("ray", None) == "ray"
    assert capsys.readouterr().err == ""


def test_live_cli_runs_the_jobs_locally_and_records_it(no_ray, tmp_path, capsys) -> None:
    cluster, jobs = _inputs(tmp_path)
    out = tmp_path / "out"
    args = ["live", "--cluster", str(cluster), "--workload", str(jobs), "--policy", "fifo"]
    rc = main([*args, "--quiet", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert err == NOTE
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["launcher"] == "local" and cfg["resolved"]["launcher"] == "local"
    assert json.loads((out / "summary.json").read_text())["num_jobs"] == 1


@pytest.mark.parametrize("command", ["live", "serve"])
def test_cli_ray_address_without_ray_exits_2_with_one_line(
    no_ray, tmp_path, capsys, command
) -> None:
    cluster, jobs = _inputs(tmp_path)
    if command == "live":
        args = ["live", "--workload", str(jobs), "--out", str(tmp_path / "out")]
    else:
        args = ["serve", "--state", str(tmp_path / "state")]
    rc = main([*args, "--ray-address", "127.0.0.1:1", "--policy", "fifo"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err == (
        "ddlsched: error: --ray-address needs Ray: Ray is not installed "
        "(pip install 'ddlsched[ray]')\n"
    )
    assert not (tmp_path / "out").exists()


def test_serve_records_and_builds_the_local_launcher(no_ray, tmp_path, capsys) -> None:
    cluster, _ = _inputs(tmp_path)
    asked = []

    class Stop(Exception):
        pass

    def fake(kind, address, cl):
        asked.append(kind)
        raise Stop  # the service stops here: nothing else is started

    no_ray.setattr(live_service, "make_launcher", fake)
    svc = live_service.Service(
        live_service.ServeConfig(state=str(tmp_path / "state"), policy="fifo", cluster=str(cluster))
    )
    with pytest.raises(Stop):
        svc.run()
    assert asked == ["local"] and svc.cfg.launcher == "local"
    assert capsys.readouterr().err == NOTE
