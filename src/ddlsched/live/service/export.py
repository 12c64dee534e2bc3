"""``ddlsched export --state DIR --out RUN_DIR``: a live service's store as the usual run
directory (config.json, summary.json, jobs.csv, segments.csv) plus ``submitted.csv``, the
submitted jobs as a live job file, so that ``ddlsched check`` verifies the run against them.
It reads the store only: it works while the service runs, after it stopped or crashed."""

from __future__ import annotations

import csv
import io
import json
import shlex
from pathlib import Path

from ... import __version__
from ...core.cluster import Cluster, Server
from ...errors import InputError
from .history import arrival_of, origin_of, run_result
from .store import JobStore

__all__ = ["SERVICE_FILE", "export_state", "read_service_record"]

#: the service's record of itself in its state directory (cluster, policy, settings)
SERVICE_FILE = "service.json"


def read_service_record(state: Path) -> dict:
    """``DIR/service.json``, written by ``ddlsched serve`` at every start."""
    path = state / SERVICE_FILE
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            "not a service state directory (no service.json): start `ddlsched serve --state` "
            "with it first",
            source=str(state),
        ) from None
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read the service record: {e}", source=str(path)) from None
    if not isinstance(record, dict) or not isinstance(record.get("servers"), list):
        raise InputError("not a service record (no servers)", source=str(path))
    return record


def cluster_of(record: dict, source: str) -> Cluster:
    """The cluster the service scheduled, as recorded."""
    try:
        servers = tuple(Server(**s) for s in record["servers"])
        return Cluster(servers=servers, name=str(record.get("cluster_name", "service")))
    except (TypeError, ValueError) as e:
        raise InputError(f"bad servers in the service record: {e}", source=source) from None


def export_state(state: str | Path, out: str | Path, overwrite: bool = False) -> dict:
    """Write the run directory of the service state ``state`` to ``out`` (all-or-nothing);
    its summary."""
    from ...core.results import write_result_files
    from ...core.rundir import output_dir, write_file

    state = Path(state)
    if not (state / "state.sqlite").is_file():
        raise InputError("not a service state directory (no state.sqlite)", source=str(state))
    record = read_service_record(state)
    cluster = cluster_of(record, str(state / SERVICE_FILE))
    with JobStore(state) as store:
        jobs = store.jobs()
        events = store.events()
    res, extra = run_result(cluster, jobs, events)
    config = {
        "mode": "live",
        "service": True,
        "version": __version__,
        "state": str(state.resolve()),
        "jobs": "submitted.csv",
        "cluster": record.get("cluster"),
        "ray_address": record.get("ray_address"),
        "policy": record.get("policy"),
        "seed": record.get("seed", 0),
        "time_scale": 1.0,
        "launcher": record.get("launcher"),
        "settings": record.get("settings", {}),
        "resolved": record.get("resolved", {}),
    }
    res.summary.update(extra)
    # the service's policy (service.json): an elastic one resizes jobs, a sharing one puts
    # several on a GPU (``ddlsched check`` reads both from the summary)
    res.summary["elastic"] = bool(extra["elastic"] or record.get("elastic") is True)
    mj = record.get("max_jobs_per_gpu")
    if isinstance(mj, int) and not isinstance(mj, bool) and mj > 1:
        res.summary["max_jobs_per_gpu"] = mj
    origin = origin_of(jobs)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["job_id", "arrival", "gpus", "command", "max_restarts", "duration"])
    for j in jobs:
        w.writerow(
            [j.id, repr(arrival_of(j, origin)), j.job.gpus, shlex.join(j.job.command),
             j.job.max_restarts, "" if j.job.duration is None else repr(j.job.duration)]
        )  # fmt: skip
    with output_dir(out, overwrite=overwrite) as d:
        write_file(d / "submitted.csv", buf.getvalue().encode("utf-8"))
        write_result_files(res, d, config=config)
    return res.summary
