"""The one policy registry (issue #12): built-in and user policies register by the same
``register_policy`` call, declare the job kinds they run on, and every place that needs a
policy name (the builders, the sweep check, ``ddlsched list``) reads the registry."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from golden_cases import TRACE

from ddlsched import InputError, load_cluster, load_workload, simulate, simulate_named
from ddlsched.api import policies_for
from ddlsched.planning.planners import PLANNER_NAMES
from ddlsched.policies import plugins
from ddlsched.policies.gavel import POLICIES as GAVEL
from ddlsched.policies.plugins import (
    JOB_KINDS,
    MODEL_JOBS,
    PROFILE_JOBS,
    TRACE_JOBS,
    all_policies,
    builtin_policy_names,
    load_plugin,
    register_policy,
    registered_policies,
    unregister_policy,
)
from ddlsched.policy import (
    AdaDual,
    compose,
    register_gate,
    register_ordering,
    register_placement,
)
from ddlsched.sweep import _policy_problem
from ddlsched.workloads.traces import TraceOptions

PLUGIN = """\
from ddlsched.policy import (
    MODEL_JOBS, PROFILE_JOBS, TRACE_JOBS, Exclusive, compose, register_policy,
)

register_policy(
    "reg-composed",
    lambda: compose(ordering="srsf", placement="lwf", gate="adadual"),
    kinds=[MODEL_JOBS],
    description="SRSF + LWF + AdaDUAL, composed in a plugin",
)
register_policy(
    "reg-exclusive",
    lambda: Exclusive("fifo", order="fifo", placement="least-busy"),
    kinds=[PROFILE_JOBS, TRACE_JOBS],
    description="FIFO on exclusive GPUs, from a plugin",
)
"""

WANG = TraceOptions(max_gpus=8, sample=10, load_scale=10.0)
LUO = TraceOptions(max_gpus=8, load_scale=20.0)


@pytest.fixture
def plugin(tmp_path: Path):
    """The plugin file, loaded; its names are forgotten afterwards."""
    before = set(registered_policies())
    path = tmp_path / "myplugin.py"
    path.write_text(PLUGIN)
    load_plugin(str(path))
    yield path
    for name in set(registered_policies()) - before:
        unregister_policy(name)


def _same(a, b) -> None:
    assert a.summary == b.summary
    assert [(j.job_id, j.start, j.finish) for j in a.jobs] == [
        (j.job_id, j.start, j.finish) for j in b.jobs
    ]


def test_a_plugin_policy_runs_on_every_backend_it_declares(plugin, tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE)
    entries = registered_policies()
    assert entries["reg-composed"].kinds == (MODEL_JOBS,)
    assert entries["reg-exclusive"].kinds == (PROFILE_JOBS, TRACE_JOBS)
    # model jobs, through the composed engine: the same runs as the built-in it recomposes
    for granularity in ("iteration", "job"):
        s = {"granularity": granularity}
        mine = simulate_named("tiny", "wang20", "reg-composed", settings=s, trace=WANG)
        _same(mine, simulate_named("tiny", "wang20", "ada-srsf", settings=s, trace=WANG))
    # a job-level policy on application-profile jobs (both semantics) and on trace jobs
    for sem in ("events", "rounds"):
        s = {"semantics": sem}
        mine = simulate_named("tiny", "luo24-12", "reg-exclusive", settings=s, trace=LUO)
        _same(mine, simulate_named("tiny", "luo24-12", "fifo", settings=s, trace=LUO))
    _same(
        simulate_named("tiny", str(trace), "reg-exclusive"),
        simulate_named("tiny", str(trace), "fifo"),
    )
    # a kind the policy did not declare is the built-ins' one-line error
    with pytest.raises(InputError, match="'reg-composed' cannot run trace") as e:
        simulate_named("tiny", str(trace), "reg-composed")
    assert e.value.field == "policy" and "policies for trace (duration) jobs" in str(e.value)
    with pytest.raises(InputError, match="'reg-exclusive' cannot run model jobs"):
        simulate_named("tiny", "wang20", "reg-exclusive", trace=WANG)


def test_list_shows_a_plugin_s_policies_with_their_kinds(plugin) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", "list", "--plugin", str(plugin)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    lines = {line.split()[0]: line for line in r.stdout.splitlines() if line.startswith("  ")}
    assert "composed in a plugin" in lines["reg-composed"]
    assert lines["reg-composed"].endswith("[model]")
    assert lines["reg-exclusive"].endswith("[profile,trace]")
    assert lines["pollux"].endswith("[profile]") and lines["sjf-bco"].endswith("[model]")
    assert "registered policies" in r.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", "list", "--plugin", "no-such-file.py"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no such file" in bad.stderr


def test_the_registry_is_the_one_list_of_builtin_names() -> None:
    names = builtin_policy_names()
    assert (
        len(names) == len(set(names)) == 19 + len(GAVEL)
    )  # sia, gavel-tunedjobs, pollux-unaware (#29)
    by_kind = {n for k in JOB_KINDS for n in policies_for(k)}
    assert by_kind == set(names)
    assert set(PLANNER_NAMES) == {"sjf-bco", "yu-ff", "yu-ls", "yu-rand"}
    assert plugins.PROFILE_POLICY_NAMES == tuple(policies_for(PROFILE_JOBS))
    assert all(_policy_problem(n) is None for n in names)
    with pytest.raises(ValueError, match="built-in"):
        register_policy("Pollux", lambda: None)
    with pytest.raises(ValueError, match="kinds"):
        register_policy("reg-bad", lambda: None, kinds=["gpu jobs"])
    unregister_policy("pollux")  # built-ins stay
    assert "pollux" in builtin_policy_names()
    # the built-ins register in one module, by the call a plugin makes
    src = Path(plugins.__file__).parent.parent
    call = re.compile(r"^\s*register_policy\(", re.MULTILINE)
    registering = sorted(
        str(p.relative_to(src)) for p in src.rglob("*.py") if call.search(p.read_text())
    )
    assert registering == ["policies/builtin.py"]


def test_a_builtin_added_in_the_registry_runs_everywhere_it_is_looked_up(tmp_path: Path) -> None:
    """One registration is all a new built-in needs: the builders, the kind check, the
    sweep check and the kind lists find it."""

    def make(settings, placement):
        from ddlsched.policies.luo import Exclusive

        return Exclusive("reg-builtin", order="sjf", backfill=settings.backfill)

    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE)
    register_policy("reg-builtin", make, kinds=[TRACE_JOBS], places_jobs=True, builtin=True)
    try:
        assert "reg-builtin" in policies_for(TRACE_JOBS)
        assert "reg-builtin" not in policies_for(PROFILE_JOBS)
        assert _policy_problem("reg-builtin") is None
        _same(
            simulate_named("tiny", str(trace), "reg-builtin"),
            simulate_named("tiny", str(trace), "sjf"),
        )
        with pytest.raises(InputError, match="cannot run application-profile jobs"):
            simulate_named("tiny", "luo24-12", "reg-builtin", trace=LUO)
    finally:
        plugins._REGISTRY.pop("reg-builtin")
    assert "reg-builtin" not in all_policies()


PARTS_PLUGIN = """\
from ddlsched.policy import (
    AdaDual, FirstFit, fifo, register_gate, register_ordering, register_placement,
)

register_placement("reg-ff", FirstFit)
register_ordering("reg-fifo", fifo)
register_gate("reg-adadual", AdaDual())
"""


@pytest.fixture
def parts_plugin(tmp_path: Path):
    """A plugin registering a placement, an ordering and a gate; forgotten afterwards."""
    from ddlsched.policies import gates, ordering, placement

    path = tmp_path / "parts.py"
    path.write_text(PARTS_PLUGIN)
    load_plugin(str(path))
    yield path
    placement.PLACEMENTS.pop("reg-ff")
    placement.PLACEMENT_NAMES.remove("reg-ff")
    ordering.ORDERINGS.pop("reg-fifo")
    gates.GATES.pop("reg-adadual")


def test_placements_orderings_and_gates_register_like_policies(parts_plugin) -> None:
    # a registered placement works for --placement and in compose, like the built-in it wraps
    _same(
        simulate_named("tiny", "wang20", "ada-srsf", placement="reg-ff", trace=WANG),
        simulate_named("tiny", "wang20", "ada-srsf", placement="ff", trace=WANG),
    )
    pol = compose(ordering="reg-fifo", placement="reg-ff", gate="reg-adadual")
    ref = compose(ordering="fifo", placement="ff", gate="adadual")
    cluster = load_cluster("tiny")
    jobs = load_workload("wang20", seed=0, options=WANG)
    _same(simulate(cluster, jobs, pol), simulate(cluster, jobs, ref))
    # built-ins stay, taken names need replace=True, lwf-K stays a pattern
    with pytest.raises(ValueError, match="built-in placement"):
        register_placement("LWF", lambda: None)
    with pytest.raises(ValueError, match="already registered"):
        register_ordering("reg-fifo", lambda job, sim: ())
    with pytest.raises(ValueError, match="built-in gate"):
        register_gate("adadual", AdaDual())
    with pytest.raises(ValueError, match="lwf-K"):
        register_placement("lwf-4", lambda: None)
    # and `ddlsched list --plugin` shows them
    r = subprocess.run(
        [sys.executable, "-m", "ddlsched.cli", "list", "--plugin", str(parts_plugin)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "placements: ff, ls, rand, lwf, reg-ff, lwf-K" in r.stdout
    assert "orderings:  fifo, srsf, reg-fifo" in r.stdout
    assert "gates:      none, srsf1, srsf2, srsf3, adadual, reg-adadual" in r.stdout


def test_the_settings_a_builtin_reads_come_from_the_registry() -> None:
    """``settings_scope`` asks the registry which built-in reads a policy-specific setting;
    its messages name exactly those policies."""
    from ddlsched.policies.plugins import builtin_reads
    from ddlsched.settings_scope import SCOPES

    readers: dict[str, set[str]] = {}
    for name, entry in all_policies().items():
        for key in entry.settings:
            readers.setdefault(key, set()).add(name)
    assert readers == {
        "lam": {"sjf-bco"},
        "bco_kappa": {"sjf-bco"},
        "interval": {"tiresias", "pollux", "pollux-unaware", "sia"},
        "backfill": {"fifo", "sjf"},
        "gpu_type_aware": {"fifo", "sjf"},
        "tiresias_thresholds": {"tiresias"},
        "pollux_ncf_batch": {"pollux", "pollux-unaware"},
        "pollux_search": {"pollux", "pollux-unaware"},
        "goodput_fit": {"pollux", "pollux-unaware", "sia"},
        "gavel_round": {*GAVEL, "gavel-tunedjobs"},
        "gavel_reset_interval": set(GAVEL),
        "gavel_fifo_quirk": {"gavel-fifo"},
        **{k: {"sia"} for k in ("sia_p", "sia_lambda_n", "sia_lambda_a")},
    }
    for key, names in readers.items():
        where = SCOPES[key][0]
        assert all(n in where for n in names), (key, where)
    assert builtin_reads("tiresias", "interval") and not builtin_reads("fifo", "interval")
    assert not builtin_reads(None, "backfill") and not builtin_reads("nope", "backfill")


def test_list_imports_neither_scipy_nor_matplotlib() -> None:
    """``ddlsched list`` reads names and descriptions only (startup, issue #12): the heavy
    modules are imported by the code that needs them (a figure, a confidence interval)."""
    code = (
        "import contextlib, io, sys\n"
        "from ddlsched.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['list'])\n"
        "print(sorted(m for m in ('scipy', 'matplotlib') if m in sys.modules))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_import_ddlsched_is_light_and_names_resolve() -> None:
    """``import ddlsched`` loads no numpy (the live job-side client and ``--help`` pay nothing);
    every public name still resolves on first use, to the defining module's object."""
    code = (
        "import sys, ddlsched\n"
        "print('numpy' in sys.modules)\n"
        "from ddlsched import simulate, Cluster, InputError\n"
        "from ddlsched.api import simulate as s2\n"
        "print(simulate is s2, sorted(ddlsched.__all__) == sorted(ddlsched._LAZY))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True", "True"]
    import ddlsched

    with pytest.raises(AttributeError, match="no_such_name"):
        ddlsched.no_such_name  # noqa: B018
