"""``ddlsched replay LIVE_DIR --policy P``: a simulator calibrated from one live run.

A live run (``ddlsched live``) measured, per finished job, the seconds its work took
(``measured.csv``: its attempts until they ended or were asked to stop, minus the start-up of
its restarts), and its events (``events.jsonl``) say how long each restart took to start (launch
→ first progress report) and each stop to complete (stop request → exit). ``replay`` turns that
into a trace (``replay.csv`` in the generic format, docs/formats.md) — per job its arrival, GPUs,
``duration``, ``restart_delay`` (its own mean restart start-up) and ``stop_delay`` (its own mean
stop) — and simulates it under any policy with the engine of ``ddlsched run``, deciding at the
live engine's polls (``poll_interval``), into the same run directory (all-or-nothing).
``ddlsched compare LIVE_DIR_OF_P OUT`` then shows, per job, how far the prediction is from a
live run of P (docs/live.md, "Replay").

A start-up is measured without the poll's delay: the engine sees a first report at its next
poll, by when the job may have made steps (those after the checkpoint it resumed from, at the
job's step time from its reports) — work, which goes back into its duration. Where a job has no
measurement of its own (it never restarted, or was never stopped) it gets the run's mean (its
restarts'; where the run restarted nothing, its first start-ups'; ``mean_stop_s``); where the
run measured no stop at all, one poll interval (a process that exits at once: the engine sees
it at its next poll).

Live runs of application-profile jobs (``app``; any policy, pollux and the sharing policies
included) replay through the profiles instead (``replay_profile``): each job's work and speed
calibrated in its profile's units, its configuration — GPUs, batch, shared or not — the
replayed policy's; they write ``replay-jobs.csv`` instead of ``replay.csv``. A run of trace jobs
that resized its jobs or shared GPUs is still refused: its durations hold those allocations.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import __version__
from .core.cluster import Cluster
from .core.job import JobSpec
from .core.results import SimResult
from .errors import InputError
from .parsing import NumberError, to_float, to_int
from .replay_profile import PROFILE_REPLAY_FILE, ProfileJob
from .settings import Settings

__all__ = [
    "REPLAY_FILE",
    "LiveMeasurements",
    "read_live",
    "read_replay_jobs",
    "replay",
    "replay_settings",
]

#: the calibrated trace a replay writes beside its run files (and runs)
REPLAY_FILE = "replay.csv"
#: ``measured.csv``'s names: ``live-<job id>``
_NAME = re.compile(r"live-(\d+)")


@dataclass
class LiveMeasurements:
    """What ``replay`` reads of a live run directory."""

    path: Path
    config: dict
    summary: dict
    #: the finished jobs as calibrated trace jobs (live job ids), in (arrival, id) order
    jobs: list[JobSpec]
    #: per job: its measured restart start-ups and stops (seconds)
    restarts: dict[int, list[float]] = field(default_factory=dict)
    stops: dict[int, list[float]] = field(default_factory=dict)
    #: a run of application-profile jobs: the jobs calibrated in their profiles' units
    #: (``replay_profile``; ``jobs`` are then their specs)
    profile: list[ProfileJob] | None = None

    @property
    def policy(self) -> str:
        return str(self.config.get("policy", ""))


# ---------------------------------------------------------------------- reading a live run
def read_live(path: str | Path, cluster: str | None = None) -> LiveMeasurements:
    """The calibrated jobs of the live run directory ``path`` (``InputError``, one line naming
    the file, for a directory that is not a complete live run); ``cluster``: for a run of
    application-profile jobs, the cluster whose placements the profiles look up (default: the
    live run's)."""
    d = Path(path)
    if not d.is_dir():
        raise InputError(
            "no such directory" if not d.exists() else "not a directory", source=str(path)
        )
    config = _json_object(d / "config.json")
    if config.get("mode") != "live":
        mode = config.get("mode")
        what = f"mode {mode!r}" if mode is not None else "no mode: a simulated run"
        raise InputError(
            f"not a live run ({what}); replay takes a directory `ddlsched live` wrote",
            source=str(d / "config.json"),
            field="mode",
        )
    summary = _json_object(d / "summary.json")
    if summary.get("interrupted") is True:
        raise InputError(
            "the live run was interrupted: its jobs did not all run to the end",
            source=str(d / "summary.json"),
            field="interrupted",
        )
    resized = summary.get("elastic") is True
    shared = summary.get("max_jobs_per_gpu", 1) != 1
    resolved = config.get("resolved")
    profiled = isinstance(resolved, dict) and resolved.get("backend") == "live-profile"
    if (resized or shared) and not profiled:
        what = "resized its jobs (elastic)" if resized else "put several jobs on a GPU"
        raise InputError(
            f"the live run's policy {config.get('policy')!r} {what}: its measured durations "
            "hold those allocations, which trace jobs cannot replay; replay a live run in which "
            "every job ran alone on the GPUs it asked for (fifo, sjf, tiresias; docs/live.md, "
            '"Replay")',
            source=str(d / "summary.json"),
            field="elastic" if resized else "max_jobs_per_gpu",
        )
    measured = _read_measured(d / "measured.csv")
    events = _read_events(d / "events.jsonl")
    live = LiveMeasurements(d, config, summary, [])
    poll = live_poll_interval(live)
    if profiled:
        _calibrate_profile(live, measured, events, poll, cluster)
        return live
    live.jobs, live.restarts, live.stops = calibrate(
        measured, events, summary, str(d / "summary.json"), poll
    )
    return live


def _calibrate_profile(
    live: LiveMeasurements,
    measured: list[tuple[int, float, int, float]],
    events: dict[int, JobEvents],
    poll: float,
    cluster: str | None,
) -> None:
    """``live``'s jobs calibrated in their profiles' units (``replay_profile``): their apps and
    batches from the live run's job file, the profiles of its settings."""
    from types import SimpleNamespace

    from .backends.profile import type_applications
    from .live.jobfile import read_live_jobs
    from .perf.builtin_apps import builtin_profiles
    from .perf.typed_profiles import load_profiles
    from .replay_profile import calibrate_profile

    source = str(live.path / "config.json")
    jobs_file = live.config.get("jobs")
    if not isinstance(jobs_file, str) or not Path(jobs_file).is_file():
        raise InputError(
            f"the live run's job file {jobs_file!r} is not there: a run of application-profile "
            "jobs replays with their apps and batches from it",
            source=source,
            field="jobs",
        )
    live_jobs = {j.job_id: (j.app or "", j.batch_size or 0) for j in read_live_jobs(jobs_file)}
    missing = sorted(job for job, *_ in measured if job not in live_jobs)
    if missing:
        raise InputError(
            f"jobs {missing} of measured.csv are not in the job file {jobs_file}", source=source
        )
    settings = live.config.get("settings") or {}
    profiles = settings.get("profile", {}).get("profiles") if isinstance(settings, dict) else ""
    apps = dict(load_profiles(profiles) if profiles else builtin_profiles())
    _, cl = _cluster(live, cluster)
    # GPU types with their own profiles (a Sia-layout directory, a cluster file's
    # [gpu_types.T] profiles): each attempt is calibrated on its type's, as the run used them
    needed = [SimpleNamespace(application=a) for a, _ in live_jobs.values() if a]
    type_apps = type_applications(cl, needed, apps, profiles or "")  # type: ignore[arg-type]
    for a in sorted({n.application for n in needed} - set(apps)):
        # only per-type tables (Sia's layout): the cluster's first type's are the default
        typed = [type_apps[t][a] for t in cl.gpu_types if a in type_apps.get(t, {})]
        if not typed:
            raise InputError(
                f"the live run's application {a!r} has no profile in "
                f"{profiles or 'the built-in profiles'}",
                source=source,
                field="settings.profile.profiles",
            )
        apps[a] = typed[0]
    calibrated, live.restarts, live.stops = calibrate_profile(
        measured,
        events,
        live.summary,
        live_jobs,
        apps,
        cl.gpu_server,
        poll,
        type_apps=type_apps,
        gpu_types=tuple(cl.gpu_type(g) for g in range(cl.num_gpus)),
    )
    live.profile = calibrated
    live.jobs = [j.spec() for j in calibrated]


def _json_object(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("missing: not a complete live run directory", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", source=str(path)) from None
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise InputError(f"not valid JSON ({e})", source=str(path)) from None
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object", source=str(path))
    return doc


def _read_measured(path: Path) -> list[tuple[int, float, int, float]]:
    """``measured.csv``: (job id, arrival, GPUs, duration) per finished job."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(
            "missing: a live run writes it (a run of an older ddlsched has none)", source=str(path)
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", source=str(path)) from None
    rows = list(csv.reader(io.StringIO(text)))
    want = ["arrival", "num_gpus", "duration", "name"]
    if not rows or [c.strip() for c in rows[0]] != want:
        raise InputError(f"expected the header {','.join(want)}", source=str(path), line=1)
    out: list[tuple[int, float, int, float]] = []
    seen: set[int] = set()
    for line, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != 4:
            raise InputError(f"expected 4 fields, got {len(row)}", source=str(path), line=line)
        m = _NAME.fullmatch(row[3].strip())
        if m is None:
            raise InputError(
                f"expected a name live-<job id>, got {row[3]!r}",
                source=str(path),
                line=line,
                field="name",
            )
        job = int(m.group(1))
        if job in seen:
            raise InputError(f"job {job} appears twice", source=str(path), line=line, field="name")
        seen.add(job)
        try:
            arrival = to_float(row[0], text=True)
            gpus = to_int(row[1], text=True)
            duration = to_float(row[2], text=True)
        except NumberError as e:
            raise InputError(str(e), source=str(path), line=line) from None
        if arrival < 0 or gpus < 1 or not duration > 0:
            raise InputError(
                "expected arrival ≥ 0, num_gpus ≥ 1 and duration > 0",
                source=str(path),
                line=line,
            )
        out.append((job, arrival, gpus, duration))
    if not out:
        raise InputError("no finished job: nothing to replay", source=str(path))
    return out


@dataclass
class _Attempt:
    """One attempt of a live job, from its events (engine times, s)."""

    launched: float
    first_t: float | None = None  # its first ``first_report``: when the engine saw it …
    first_step: int | None = None  # … and the step the job had reached by then
    stop_asked: float | None = None
    stop_step: int | None = None  # the step its ``stopped`` event says
    gpus: tuple[int, ...] = ()  # the GPUs and total batch its ``start`` event says
    batch: int | None = None


@dataclass
class JobEvents:
    """What ``events.jsonl`` says of one job."""

    attempts: dict[int, _Attempt] = field(default_factory=dict)
    #: every ``first_report`` as (attempt, time)
    reports: list[tuple[int, float]] = field(default_factory=list)
    #: completed stops: ``stop_requested`` → the next ``stopped`` (s)
    stops: list[float] = field(default_factory=list)
    finish: tuple[float, int | None] | None = None

    def step_time(self) -> float | None:
        """Seconds per step of the job, from its reports within attempts: from the first
        report to the stop request (stopped attempts) or, if it never stopped after a report,
        to its finish; None without at least 5 steps to go by."""
        pairs = []
        for a in self.attempts.values():
            if a.first_t is not None and a.first_step is not None and a.stop_asked is not None:
                if a.stop_step is not None:
                    pairs.append((a.stop_asked - a.first_t, a.stop_step - a.first_step))
        if not pairs and self.finish is not None and self.finish[1] is not None:
            last = self.attempts.get(max(self.attempts)) if self.attempts else None
            if last is not None and last.first_t is not None and last.first_step is not None:
                pairs.append((self.finish[0] - last.first_t, self.finish[1] - last.first_step))
        dt = sum(t for t, k in pairs if k > 0 and t > 0)
        dk = sum(k for t, k in pairs if k > 0 and t > 0)
        return dt / dk if dk >= 5 and dt > 0 else None

    def startup(self, number: int, step_time: float | None) -> float | None:
        """The start-up of attempt ``number`` (launch → its first report), without the poll's
        delay: the engine sees the first report at a poll, by when the job may have made
        steps already (the steps since the checkpoint it resumed from × its step time)."""
        a = self.attempts.get(number)
        if a is None or a.first_t is None:
            return None
        seen = a.first_t - a.launched
        resumed = self._resumed_from(number)
        if step_time is None or a.first_step is None or resumed is None:
            return seen
        return max(seen - max(a.first_step - resumed, 0) * step_time, 0.0)

    def _resumed_from(self, number: int) -> int | None:
        """The step attempt ``number`` resumed from: the step the last earlier attempt that
        reported was stopped at (a job checkpoints when asked to stop), 0 if none reported."""
        for k in sorted((k for k in self.attempts if k < number), reverse=True):
            earlier = self.attempts[k]
            if earlier.first_t is not None:
                return earlier.stop_step
        return 0

    def restarts(self, step_time: float | None) -> list[float]:
        """The start-ups of its restarts (attempts ≥ 1 that reported)."""
        out = []
        for k in sorted(self.attempts):
            if k >= 1 and (r := self.startup(k, step_time)) is not None:
                out.append(r)
        return out

    def subtracted(self) -> float:
        """Seconds measured.csv left out of the job's duration as restart start-ups: as the
        live executor counts them, launch → first report of every attempt numbered ≥ 1 (an
        attempt 0 stopped before it ever reported does not make attempt 1's the first)."""
        return sum(
            a.first_t - a.launched
            for k, a in self.attempts.items()
            if k >= 1 and a.first_t is not None
        )


def _read_events(path: Path) -> dict[int, JobEvents]:
    """Per job, its attempts, first reports, completed stops (``stop_requested`` → the next
    ``stopped``; a stop that ended otherwise — the job finished or crashed meanwhile — is no
    stop's duration) and finish, from ``events.jsonl``."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError("missing: not a complete live run directory", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", source=str(path)) from None
    jobs: dict[int, JobEvents] = {}
    asked: dict[int, tuple[float, _Attempt | None]] = {}
    kinds = ("start", "first_report", "stop_requested", "stopped", "finish", "crashed", "failed")
    for n, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            e = json.loads(text)
        except ValueError as err:
            raise InputError(f"not a JSON object ({err})", source=str(path), line=n) from None
        if not isinstance(e, dict) or not isinstance(e.get("event"), str):
            raise InputError("expected a JSON object with an 'event'", source=str(path), line=n)
        kind = e["event"]
        if kind not in (*kinds, "lost"):
            continue
        t, job = e.get("t"), e.get("job")
        if not _number(t) or not _whole(job):
            raise InputError(
                f"a {kind!r} event needs a time 't' and a job id 'job'", source=str(path), line=n
            )
        ev = jobs.setdefault(job, JobEvents())
        attempt = e.get("attempt")
        step = e.get("step") if _whole(e.get("step")) else None
        a = ev.attempts.get(attempt) if _whole(attempt) else None
        if kind == "start" and _whole(attempt):
            gpus = e.get("gpus")
            gpus = tuple(gpus) if isinstance(gpus, list) and all(map(_whole, gpus)) else ()
            ev.attempts[attempt] = _Attempt(t, gpus=gpus, batch=_batch(e.get("batch")))
        elif kind == "first_report" and _whole(attempt):
            ev.reports.append((attempt, t))
            if a is not None and a.first_t is None and t >= a.launched:
                a.first_t, a.first_step = t, step
        elif kind == "stop_requested":
            if e.get("already_exited") is True:
                asked.pop(job, None)
            else:
                asked[job] = (t, a)
                if a is not None:
                    a.stop_asked = t
        elif kind == "stopped":
            t0, stopped = asked.pop(job, (None, None))
            if t0 is not None and t >= t0:
                ev.stops.append(t - t0)
            if stopped is not None:
                stopped.stop_step = step
        else:  # finish, crashed, failed, lost: a pending stop ended without being one
            asked.pop(job, None)
            if kind == "finish":
                ev.finish = (t, step)
    return jobs


def _batch(x: object) -> int | None:
    """A ``start`` event's total batch (written as text), None if absent or not a count."""
    try:
        b = int(str(x))
    except ValueError:
        return None
    return b if b >= 1 else None


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) and x >= 0


def _whole(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _mean(xs: list[float]) -> float:
    return round(sum(xs) / len(xs), 6)


def calibrate(
    measured: list[tuple[int, float, int, float]],
    events: Mapping[int, JobEvents],
    summary: Mapping[str, object],
    source: str = "summary.json",
    poll: float = 0.2,
) -> tuple[list[JobSpec], dict[int, list[float]], dict[int, list[float]]]:
    """The finished jobs as trace jobs with their own delays (module docstring), and per job
    the restart start-ups and stops measured; ``poll``: the live engine's poll interval."""
    from .workloads.trace_formats import placeholder_model

    def run_mean(key: str) -> float:
        value = summary.get(key, 0.0)
        if not _number(value):
            raise InputError(f"expected seconds ≥ 0, got {value!r}", source=source, field=key)
        return float(value)  # type: ignore[arg-type]

    mean_stop, mean_startup = run_mean("mean_stop_s"), run_mean("mean_startup_s")
    steps = {job: ev.step_time() for job, ev in events.items()}
    restarts = {job: r for job, ev in events.items() if (r := ev.restarts(steps[job]))}
    stops = {job: ev.stops for job, ev in events.items() if ev.stops}
    firsts = [f for job, ev in events.items() if (f := ev.startup(0, steps[job])) is not None]
    # a job that never restarted: the run's mean restart start-up; where the run restarted
    # nothing, its first start-ups' (the same process start, without the poll's delay)
    every = [r for rs in restarts.values() for r in rs]
    restart_default = _mean(every) if every else _mean(firsts) if firsts else mean_startup
    # no stop measured: a process that exits at once, which the engine sees at its next poll
    stop_default = round(mean_stop, 6) if stops else poll
    model = placeholder_model("live")
    jobs = []
    for job, arrival, gpus, duration in measured:
        ev = events.get(job)
        own = restarts.get(job, [])
        if ev is not None and ev.reports:  # the start-ups measured.csv left out: ours instead
            duration = round(max(duration + ev.subtracted() - sum(own), 1e-6), 6)
        jobs.append(
            JobSpec(
                job_id=job,
                arrival=arrival,
                num_gpus=gpus,
                iterations=0,
                model=model,
                duration=duration,
                name=f"live-{job}",
                restart_delay=_mean(own) if own else restart_default,
                stop_delay=_mean(stops[job]) if job in stops else stop_default,
            )
        )
    return sorted(jobs, key=lambda j: (j.arrival, j.job_id)), restarts, stops


def read_replay_jobs(path: str | Path) -> list[JobSpec]:
    """The jobs of a replay's ``replay.csv`` with their live job ids (its names
    ``live-<id>``; a generic trace otherwise numbers its jobs 0..n-1)."""
    from .workloads.trace_generic import read_generic

    jobs = read_generic(Path(path))
    ids = [_NAME.fullmatch(j.name) for j in jobs]
    if all(ids) and len({m.group(1) for m in ids if m}) == len(jobs):
        jobs = [replace(j, job_id=int(m.group(1))) for j, m in zip(jobs, ids, strict=True) if m]
    return jobs


# ---------------------------------------------------------------------- the replay
def replay_settings(
    live: LiveMeasurements, jobs: list[JobSpec], policy: str, given: Mapping[str, object]
) -> Settings:
    """The replay's settings: the live run's that apply to a run of ``policy`` on these jobs
    (e.g. Tiresias' ``interval`` when P is tiresias too), then ``given`` (``--set``) over them."""
    from dataclasses import fields

    from .api import run_scope
    from .policies.plugins import resolve_user_policy
    from .settings import flatten
    from .settings_scope import applies

    source = str(live.path / "config.json")
    recorded = live.config.get("settings") or {}
    if not isinstance(recorded, dict):
        raise InputError("expected a settings object", source=source, field="settings")
    try:
        inherited = Settings.from_mapping(recorded, source=source)
    except InputError as e:
        raise InputError(f"the live run's settings: {e.message}", source=source) from None
    mine = Settings.from_mapping(given)  # checked first: its errors name --set
    named = set(flatten(given, "--set"))
    default = Settings()
    merged = {
        f.name: getattr(inherited, f.name)
        for f in fields(Settings)
        if getattr(inherited, f.name) != getattr(default, f.name)
    }
    if "poll_interval" not in named:  # decide as the live engine did: at its polls
        merged["poll_interval"] = live_poll_interval(live)
    merged.update({k: getattr(mine, k) for k in named})
    custom, _ = resolve_user_policy(policy) or (None, None)
    scope = run_scope(
        jobs, custom if custom is not None else policy, None, replace(default, **merged)
    )
    kept = {k: v for k, v in merged.items() if k in named or applies(k, scope)}
    out = replace(default, **kept)
    out.check("--set")
    return out


@dataclass
class ReplayConfig:
    """One ``ddlsched replay``."""

    live: str
    policy: str
    out: str
    settings: Mapping[str, object] = field(default_factory=dict)  # --set (as given)
    seed: int | None = None  # None: the live run's
    cluster: str | None = None  # None: the live run's
    overwrite: bool = False


def replay(
    cfg: ReplayConfig, progress: Callable[[int, int], None] | None = None
) -> tuple[SimResult, LiveMeasurements]:
    """Calibrate the live run ``cfg.live`` and simulate it under ``cfg.policy`` into
    ``cfg.out`` (the run directory of ``ddlsched run``, plus ``replay.csv``)."""
    from .api import resolve_run, simulate
    from .core.results import write_result_files
    from .core.rundir import output_dir, same_config_rule
    from .workloads.io import validate_fits
    from .workloads.trace_generic import write_generic

    live = read_live(cfg.live, cfg.cluster)
    cluster_name, cluster = _cluster(live, cfg.cluster)
    validate_fits(live.jobs, cluster, str(live.path / "measured.csv"))
    if live.profile is not None:  # the poll interval goes to its engine (not a profile setting)
        given = {k: v for k, v in cfg.settings.items() if k != "poll_interval"}
        settings = replay_settings(live, live.jobs, cfg.policy, given)
        return _replay_profile(cfg, live, cluster_name, cluster, settings, progress), live
    settings = replay_settings(live, live.jobs, cfg.policy, cfg.settings)
    seed = cfg.seed if cfg.seed is not None else _seed(live)
    record = _record(cfg, live, cluster_name, REPLAY_FILE, seed, settings)
    with output_dir(cfg.out, may_replace=same_config_rule(record), overwrite=cfg.overwrite) as d:
        write_generic(live.jobs, d / REPLAY_FILE)
        jobs = read_replay_jobs(d / REPLAY_FILE)  # what runs is what the file says
        record["resolved"] = resolve_run(jobs, cfg.policy, None, settings)
        res = simulate(cluster, jobs, cfg.policy, seed=seed, settings=settings, progress=progress)
        write_result_files(res, d, config=record)
    return res, live


def _replay_profile(
    cfg: ReplayConfig,
    live: LiveMeasurements,
    cluster_name: str,
    cluster: Cluster,
    settings: Settings,
    progress: Callable[[int, int], None] | None,
) -> SimResult:
    """``replay`` of a live run of application-profile jobs (``replay_profile``)."""
    from .api import build_simulator
    from .core.results import write_result_files
    from .core.rundir import output_dir, same_config_rule
    from .replay_profile import ReplayProfileBackend, read_profile_jobs, write_profile_jobs

    assert live.profile is not None
    seed = cfg.seed if cfg.seed is not None else _seed(live)
    poll = live_poll_interval(live)
    if "poll_interval" in cfg.settings:  # --set poll_interval=…: checked as a setting
        poll = Settings.from_mapping({"poll_interval": cfg.settings["poll_interval"]}).poll_interval
    record = {**_record(cfg, live, cluster_name, PROFILE_REPLAY_FILE, seed, settings),
              "poll_interval": poll}  # fmt: skip
    with output_dir(cfg.out, may_replace=same_config_rule(record), overwrite=cfg.overwrite) as d:
        write_profile_jobs(live.profile, d / PROFILE_REPLAY_FILE)
        calibrated = read_profile_jobs(d / PROFILE_REPLAY_FILE)  # what runs is what it says
        backend = ReplayProfileBackend(calibrated, poll)
        jobs = [j.spec() for j in calibrated]
        sim = build_simulator(
            cluster,
            jobs,
            cfg.policy,
            seed=seed,
            settings=settings,
            backend=backend,
            progress=progress,
        )
        res = sim.run()
        record["resolved"] = res.resolved
        write_result_files(res, d, config=record)
    return res


def _record(
    cfg: ReplayConfig,
    live: LiveMeasurements,
    cluster_name: str,
    workload: str,
    seed: int,
    settings: Settings,
) -> dict[str, object]:
    """config.json of a replay (``mode = "replay"``; docs/live.md, "Replay")."""
    return {
        "mode": "replay",
        "version": __version__,
        "live": str(live.path.resolve()),
        "live_run_id": live.summary.get("run_id"),
        "live_policy": live.policy,
        "cluster": cluster_name,
        "workload": workload,
        "policy": cfg.policy,
        "seed": seed,
        "settings": settings.sectioned(),
    }


def live_poll_interval(live: LiveMeasurements) -> float:
    """Seconds between the live engine's polls (config.json's ``poll_interval``; runs of an
    older ddlsched do not record it: the default of ``ddlsched live``, 0.2 s)."""
    from .live.run import LiveConfig

    value = live.config.get("poll_interval", LiveConfig.poll_interval)
    if not _number(value) or not value > 0:  # type: ignore[operator]
        raise InputError(
            f"expected seconds > 0, got {value!r}",
            source=str(live.path / "config.json"),
            field="poll_interval",
        )
    return float(value)  # type: ignore[arg-type]


def _cluster(live: LiveMeasurements, given: str | None) -> tuple[str, Cluster]:
    """The cluster to replay on: ``given``, else the live run's (config.json)."""
    from .core.cluster_io import load_cluster

    source = str(live.path / "config.json")
    name = given or live.config.get("cluster")
    if not name:
        raise InputError(
            "the live run used a Ray cluster's GPUs (no cluster file recorded): give --cluster",
            source=source,
            field="cluster",
        )
    if not isinstance(name, str):
        raise InputError(f"expected a cluster, got {name!r}", source=source, field="cluster")
    try:
        return name, load_cluster(name)
    except InputError as e:
        if given:
            raise
        raise InputError(
            f"the live run's cluster {name!r} cannot be loaded ({e}); give --cluster",
            source=source,
            field="cluster",
        ) from None


def _seed(live: LiveMeasurements) -> int:
    seed = live.config.get("seed", 0)
    return seed if _whole(seed) else 0  # type: ignore[return-value]
