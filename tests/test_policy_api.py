"""The policy-authoring API (``ddlsched.policy``): composing parts, registering user policies,
``MODULE:NAME`` / ``FILE.py:NAME`` specs, and policy objects passed to ``simulate``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from _toys import toy_app, toy_jobs

from ddlsched import InputError, build_simulator, load_cluster, load_workload, simulate
from ddlsched.cli import main
from ddlsched.core.cluster import Cluster
from ddlsched.core.profileexec import ProfileExecutor
from ddlsched.core.simulator import Simulator
from ddlsched.policies.plugins import PROFILE_POLICY_NAMES
from ddlsched.policy import (
    AdaDual,
    FirstFit,
    LeastWorkloadFirst,
    Policy,
    SchedulingPolicy,
    Sharing,
    SrsfN,
    compose,
    register_policy,
    registered_policies,
    resolve_policy,
    srsf,
    unregister_policy,
)

FAST = {"iterations_per_task": 1000}


@pytest.fixture(scope="module")
def wang():
    return load_cluster("wang20"), load_workload("wang20", seed=1)


@pytest.fixture
def registry():
    """Registered names are process-wide: forget the test's ones afterwards."""
    before = set(registered_policies())
    yield
    for name in set(registered_policies()) - before:
        unregister_policy(name)


def _records(res):
    return [(j.job_id, j.start, j.finish, j.gpus) for j in res.jobs]


def test_compose_from_names_equals_the_preset(wang) -> None:
    cluster, jobs = wang
    pol = compose(ordering="srsf", placement="lwf", gate="adadual")
    assert pol.name == "srsf+lwf-1+adadual"
    assert pol.ordering is srsf and pol.placement == LeastWorkloadFirst(1)
    assert isinstance(pol.gate, AdaDual)
    mine = simulate(cluster, jobs, pol, seed=1, settings=FAST)
    preset = simulate(cluster, jobs, "ada-srsf", seed=1, settings=FAST)
    assert mine.summary == preset.summary and _records(mine) == _records(preset)


def test_compose_accepts_objects_and_functions(wang) -> None:
    cluster, jobs = wang

    def biggest_first(job, sim):
        return (-job.num_gpus, job.arrival, job.job_id)

    pol = compose(ordering=biggest_first, placement=FirstFit(), gate=SrsfN(2), backfill=False)
    assert pol.name == "biggest_first+ff+srsf2" and pol.backfill is False
    res = simulate(cluster, jobs, pol, seed=1, settings=FAST)
    assert res.summary["num_jobs"] == len(jobs)
    assert compose(placement="lwf", kappa=2).placement == LeastWorkloadFirst(2)


@pytest.mark.parametrize(
    ("kw", "field", "hint"),
    [
        ({"ordering": "srfs"}, "ordering", "did you mean 'srsf'"),
        ({"placement": "lfw"}, "placement", "did you mean 'lwf'"),
        ({"gate": "adadaul"}, "gate", "did you mean 'adadual'"),
    ],
)
def test_compose_unknown_part_names(kw, field, hint) -> None:
    with pytest.raises(InputError, match=hint) as e:
        compose(**kw)
    assert e.value.field == field


def test_compose_rejects_wrong_part_types() -> None:
    with pytest.raises(TypeError, match="ordering"):
        compose(ordering=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="placement"):
        compose(placement=srsf)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="gate"):
        compose(gate=FirstFit())  # type: ignore[arg-type]


def test_register_policy_by_name(wang, registry) -> None:
    cluster, jobs = wang
    made = []

    def factory():
        made.append(1)
        return compose("mine", ordering="srsf", placement="lwf", gate="srsf1")

    assert register_policy("Mine", factory, description="test") is factory
    assert registered_policies()["mine"].description == "test"
    by_name = simulate(cluster, jobs, "MINE", seed=1, settings=FAST)
    simulate(cluster, jobs, "mine", seed=1, settings=FAST)
    assert len(made) == 2  # a fresh policy per run
    assert by_name.summary == simulate(cluster, jobs, "srsf1", seed=1, settings=FAST).summary
    with pytest.raises(ValueError, match="already registered"):
        register_policy("mine", factory)
    register_policy("mine", factory, replace=True)
    unregister_policy("mine")
    with pytest.raises(InputError, match="unknown policy 'mine'"):
        simulate(cluster, jobs, "mine", settings=FAST)


@pytest.mark.parametrize("name", ["ada-srsf", "SRSF1", "sjf-bco", *PROFILE_POLICY_NAMES])
def test_register_refuses_builtin_names(name, registry) -> None:
    with pytest.raises(ValueError, match="built-in"):
        register_policy(name, lambda: compose())


def test_register_refuses_bad_names_and_factories(registry) -> None:
    with pytest.raises(ValueError, match="contain no ':'"):
        register_policy("a:b", lambda: compose())
    with pytest.raises(TypeError, match="callable"):
        register_policy("x", compose())  # type: ignore[arg-type]


def test_builtin_profile_names_are_what_the_engine_accepts() -> None:
    jobs = load_workload("luo24-3", seed=0)
    for name in PROFILE_POLICY_NAMES:
        build_simulator(load_cluster("luo24"), jobs, name)
    with pytest.raises(InputError, match="cannot run application-profile jobs"):
        build_simulator(load_cluster("luo24"), jobs, "ada-srsf")


PLUGIN = """
from ddlsched.policy import compose

def make():
    return compose("plugged", ordering="srsf", placement="lwf", gate="srsf1")

INSTANCE = make()
NOT_A_POLICY = 42
"""


@pytest.fixture
def plugin_file(tmp_path: Path) -> Path:
    p = tmp_path / "my_plugin.py"
    p.write_text(PLUGIN)
    return p


def test_file_and_module_specs(wang, plugin_file: Path, monkeypatch) -> None:
    cluster, jobs = wang
    want = simulate(cluster, jobs, "srsf1", seed=1, settings=FAST).summary
    for name in ("make", "INSTANCE"):
        got = simulate(cluster, jobs, f"{plugin_file}:{name}", seed=1, settings=FAST)
        assert got.summary == want
    monkeypatch.syspath_prepend(str(plugin_file.parent))
    assert resolve_policy("my_plugin:make").name == "plugged"


def test_bad_specs_are_one_line_input_errors(plugin_file: Path) -> None:
    with pytest.raises(InputError, match="did you mean 'make'"):
        resolve_policy(f"{plugin_file}:mak")
    with pytest.raises(InputError, match="not a policy: missing name, attach, schedule"):
        resolve_policy(f"{plugin_file}:NOT_A_POLICY")
    with pytest.raises(InputError, match="no such file"):
        resolve_policy(f"{plugin_file.parent / 'absent.py'}:make")
    with pytest.raises(InputError, match="cannot import module 'no_such_module_xyz'"):
        resolve_policy("no_such_module_xyz:make")
    with pytest.raises(InputError, match="expected MODULE:NAME"):
        resolve_policy("my_plugin:")


def test_builtin_names_resolve_to_none() -> None:
    assert resolve_policy("ada-srsf") is None and resolve_policy("unknown-xyz") is None


def test_placement_override_on_custom_policies(wang, plugin_file: Path) -> None:
    cluster, jobs = wang
    got = simulate(cluster, jobs, f"{plugin_file}:make", placement="ff", seed=1, settings=FAST)
    want = simulate(cluster, jobs, "srsf1", placement="ff", seed=1, settings=FAST)
    assert got.summary == want.summary


class LargestFirst:
    """A policy from scratch: only what the protocol requires."""

    name = "largest-first"

    def attach(self, sim) -> None:
        self.calls = 0

    def schedule(self, sim) -> None:
        self.calls += 1
        for job in sorted(sim.queue, key=lambda j: (-j.num_gpus, j.job_id)):
            gpus = FirstFit().select(job, sim)
            if gpus is not None:
                sim.start(job, gpus)


def test_a_policy_from_scratch_runs_at_both_granularities(wang) -> None:
    cluster, jobs = wang
    pol = LargestFirst()
    assert isinstance(pol, SchedulingPolicy)
    for settings in (FAST, {"granularity": "job"}):
        res = simulate(cluster, jobs, pol, seed=1, settings=settings)
        assert res.summary["num_jobs"] == len(jobs) and pol.calls > 0
    with pytest.raises(InputError, match="applies only to composed policies"):
        simulate(cluster, jobs, pol, placement="ff", settings=FAST)


def test_an_object_that_is_not_a_policy_is_refused(wang) -> None:
    cluster, jobs = wang

    class Rounds(LargestFirst):
        interval = 10.0

    with pytest.raises(InputError, match="missing on_round"):
        simulate(cluster, jobs, Rounds(), settings=FAST)
    with pytest.raises(InputError, match="Policy is a class: pass a policy object"):
        simulate(cluster, jobs, Policy, settings=FAST)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="not a policy: missing name, attach, schedule"):
        simulate(cluster, jobs, object(), settings=FAST)  # type: ignore[arg-type]


def test_sharing_uses_the_given_ordering(tmp_path: Path) -> None:
    # equal lengths alone and ξ = 1.5: Theorem 1 never shares, so the order decides who starts
    jobs = toy_jobs("a,0,toy,1,32\nb,0,toy,2,32\nc,0,toy,1,32\n", tmp_path)

    def most_gpus_first(job, sim):
        return (-job.num_gpus, job.job_id)

    def first_started(policy) -> list[int]:
        ex = ProfileExecutor({"toy": toy_app()}, rescale_delay=0.0, interference=1.5)
        sim = Simulator(Cluster.homogeneous(1, 2), jobs, policy, ex, max_jobs_per_gpu=2)
        res = sim.run()
        return sorted(j.job_id for j in res.jobs if j.start == 0.0)

    assert Sharing("x").ordering is None  # default: SJF by L_k, as sjf-bsbf
    assert first_started(Sharing("sjf-bsbf", mode="bsbf")) == [0, 2]
    assert first_started(Sharing("big-first", mode="bsbf", ordering=most_gpus_first)) == [1]


def test_cli_runs_a_file_policy(tmp_path: Path, plugin_file: Path, capsys) -> None:
    out = tmp_path / "out"
    argv = [
        "run",
        "--cluster",
        "wang20",
        "--workload",
        "wang20",
        "--set",
        "iterations_per_task=1000",
    ]
    assert main([*argv, "--policy", f"{plugin_file}:make", "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / "config.json").read_text())["policy"] == f"{plugin_file}:make"
    assert main([*argv, "--policy", f"{plugin_file}:nope", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no name 'nope'" in err and "Traceback" not in err


def test_policy_module_exports_what_it_documents() -> None:
    import ddlsched.policy as api

    for name in api.__all__:
        assert hasattr(api, name), name
    assert textwrap.dedent(api.SchedulingPolicy.__doc__ or "").strip()
