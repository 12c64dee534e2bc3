"""Properties of the sharing policies on random small workloads: never more than two jobs on a
GPU, GPU memory never exceeded, every job completes; Tiresias preemptions appear in the output
files."""

from __future__ import annotations

import csv
import json

from _toys import toy_app
from hypothesis import given, settings
from hypothesis import strategies as st

from ddlsched.cli import main
from ddlsched.core.cluster import Cluster
from ddlsched.core.job import JobSpec, ModelProfile
from ddlsched.core.profileexec import ProfileExecutor
from ddlsched.core.simulator import Simulator
from ddlsched.policies.luo import Sharing

APPS = {"a": toy_app("a", step=1.0, max_local=64), "b": toy_app("b", step=0.5, max_local=48)}

job_st = st.tuples(
    st.integers(0, 600),  # arrival
    st.sampled_from([1, 2, 4]),  # GPUs
    st.sampled_from(["a", "b"]),
)


def _jobs(raw):
    return [
        JobSpec(
            i,
            float(t),
            g,
            0,
            ModelProfile(app, 0.0, 0.0, 32, 0.0, 0.0),
            application=app,
            batch_size=32,
            name=f"j{i}",
        )
        for i, (t, g, app) in enumerate(raw)
    ]


@settings(max_examples=30, deadline=None)
@given(
    raw=st.lists(job_st, min_size=1, max_size=10),
    mode=st.sampled_from(["ffs", "bsbf"]),
    xi=st.sampled_from([1.0, 1.3, 2.0]),
)
def test_at_most_two_jobs_per_gpu_and_memory_fits(raw, mode, xi):
    jobs = _jobs(raw)
    ex = ProfileExecutor(APPS, rescale_delay=0.0, interference=xi)
    sim = Simulator(
        Cluster.homogeneous(1, 4),
        jobs,
        Sharing(f"sjf-{mode}", mode=mode),  # type: ignore[arg-type]
        ex,
        max_jobs_per_gpu=2,
    )
    res = sim.run()
    assert len(res.jobs) == len(jobs) and all(j.finish >= j.start for j in res.jobs)
    share = {
        j.job_id: ex.runs[j.job_id].cfg.a / APPS[j.spec.application].max_local for j in sim.jobs
    }
    segs = [(s.job_id, s.start, s.end, s.placement.split(";")) for s in res.segments]
    assert len(segs) == len(jobs)  # sharing policies never preempt
    for _, start, _, _ in segs:  # the resident set only changes at segment starts
        for gpu in {g for s in segs for g in s[3]}:
            here = [jid for jid, a, b, gs in segs if gpu in gs and a <= start < b]
            assert len(here) <= 2
            assert sum(share[j] for j in here) <= 1.0 + 1e-9


def test_tiresias_preemptions_are_rows_in_the_outputs(tmp_path):
    # 4 GPUs; a (4 GPUs, t=0) and b (4 GPUs, t=10) with toy profiles, threshold low enough to
    # demote: a is preempted once, b once (see tests/test_tiresias.py for the timeline)
    prof = tmp_path / "profiles" / "toy"
    prof.mkdir(parents=True)
    (prof / "placements.csv").write_text(
        "placement,local_bsz,step_time,sync_time\n"
        + "".join(f"{n},{b},1.0,0.0\n" for n in (1, 2, 3, 4) for b in (1, 64))
    )
    (prof / "scalability.csv").write_text("num_nodes,num_replicas,local_bsz,step_time,sync_time\n")
    (prof / "validation-32.csv").write_text(
        "progress,iteration,metric,grad_sqr,grad_var\n8000,1,0,1,1\n16000,2,0,1,1\n24000,3,0,1,1\n"
    )
    wl = tmp_path / "w.csv"
    wl.write_text("name,time,application,num_replicas,batch_size\na,0,toy,4,32\nb,10,toy,4,32\n")
    cl = tmp_path / "c.toml"
    cl.write_text("[[servers]]\nnum_gpus = 4\n")
    out = tmp_path / "out"
    rc = main(
        [
            "run",
            "--cluster",
            str(cl),
            "--workload",
            str(wl),
            "--policy",
            "tiresias",
            "--set",
            f"profiles={tmp_path / 'profiles'}",
            "--set",
            "rescale_delay=0",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert rc == 0
    with open(out / "jobs.csv") as f:
        jobs = list(csv.DictReader(f))
    with open(out / "segments.csv") as f:
        segs = list(csv.DictReader(f))
    # 24000 s of work each on 4 GPUs; 16 GPU-hours = 14400 s on 4 GPUs. a is demoted at 14400
    # (b runs), b at 28800 (a resumes, ends 38400), b resumes and ends at 48000
    assert [int(j["preemptions"]) for j in jobs] == [1, 1]
    assert [float(j["finish"]) for j in jobs] == [38400.0, 48000.0]
    assert len(segs) == len(jobs) + sum(int(j["preemptions"]) for j in jobs)
    assert json.loads((out / "summary.json").read_text())["num_jobs"] == 2
