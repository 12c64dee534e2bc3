"""``ddlsched testbed``: servers as network namespaces behind shaped uplinks (issue #30).

The validation and layout tests run anywhere. The others make real namespaces, veths, a
bridge and tc qdiscs, and run real processes in them: they need root and a kernel that lets
this process make network namespaces (not a container without CAP_NET_ADMIN); elsewhere they
skip and say why. Every testbed has a name of its own (``t`` + 4 random hex digits), is taken
down in a ``finally``, and every test checks that nothing it made is left: namespaces (``ip
netns list``), links and qdiscs (they live only inside those namespaces, and the root
namespace's links are compared before and after) and processes (by pid). Rates are small
(40–50 Mbit/s) and transfers short, so the file runs in well under a minute.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ddlsched.cli import main
from ddlsched.core.cluster_io import read_cluster
from ddlsched.errors import InputError
from ddlsched.processes import process_start_time
from ddlsched.testbed import TestbedSpec, down, list_testbeds, topology, up
from ddlsched.testbed import state as tb_state
from ddlsched.testbed.fit import Point, fit_and_score, split_sizes, wang_time
from ddlsched.testbed.measure import MeasureConfig, measure, torch_available
from ddlsched.testbed.spec import format_rate, parse_rate

pytestmark = pytest.mark.solo  # link rates are timed: not beside other tests' load

SRC = Path(__file__).resolve().parents[1] / "src"
XFER = Path(__file__).with_name("_netxfer.py")


def _netns_problem() -> str | None:
    """Why this machine cannot run the namespace tests, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces and tc)"
    if not (shutil.which("ip") and shutil.which("tc")):
        return "needs iproute2 (ip, tc)"
    probe = f"t{secrets.token_hex(2)}-probe"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` fails here: {made.stderr.strip()}"
    try:
        tbf = subprocess.run(
            ["tc", "-n", probe, "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "1mbit",
             "burst", "16k", "limit", "64k"],
            capture_output=True, text=True,
        )  # fmt: skip
        if tbf.returncode != 0:
            return f"no tbf qdisc: {tbf.stderr.strip()}"
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


NETNS_PROBLEM = _netns_problem()
needs_netns = pytest.mark.skipif(NETNS_PROBLEM is not None, reason=str(NETNS_PROBLEM))


@pytest.fixture(autouse=True)
def runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Testbed state under the test's own directory, never the machine's /run."""
    d = tmp_path / "runtime"
    monkeypatch.setenv("DDLSCHED_RUNTIME_DIR", str(d))
    return d


def _name() -> str:
    return f"t{secrets.token_hex(2)}"


def _netns() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


def _root_links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True)
    return {line.split(":")[1].strip() for line in out.stdout.splitlines()}


def _alive(pid: int, start: int) -> bool:
    if process_start_time(pid) != start:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2] != "Z"


def _sleeper(ns: str) -> tuple[int, int]:
    """A process in namespace ``ns`` that nobody recorded (as a crashed command leaves)."""
    proc = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "60"], start_new_session=True)
    deadline = time.monotonic() + 5
    while (
        str(proc.pid)
        not in subprocess.run(
            ["ip", "netns", "pids", ns], capture_output=True, text=True
        ).stdout.split()
    ):
        assert time.monotonic() < deadline, "the sleeper never entered its namespace"
        time.sleep(0.01)
    return proc.pid, process_start_time(proc.pid)


def _cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def testbed_names():
    """Names handed out to a test; every one still there at its end is taken down."""
    names: list[str] = []

    def new() -> str:
        names.append(_name())
        return names[-1]

    yield new
    for name in names:
        try:
            down(name)
        except InputError:
            pass  # already down
        assert not [ns for ns in _netns() if ns.startswith(f"{name}-")], "namespaces left"


# ------------------------------------------------------------------------------ anywhere
@pytest.mark.parametrize(
    "args, field",
    [
        (["--name", "Bad"], "--name"),
        (["--name", "a" * 13], "--name"),
        (["--name", "ends-"], "--name"),
        (["--name", "1abc"], "--name"),
        (["--servers", "0"], "--servers"),
        (["--servers", "65"], "--servers"),
        (["--servers", "two"], "--servers"),
        (["--gpus-per-server", "0"], "--gpus-per-server"),
        (["--bandwidth", "100"], "--bandwidth"),
        (["--bandwidth", "100mbps"], "--bandwidth"),
        (["--bandwidth", "20gbit"], "--bandwidth"),
        (["--bandwidth", "500kbit"], "--bandwidth"),
        (["--delay", "-1"], "--delay"),
        (["--delay", "soon"], "--delay"),
    ],
)
def test_up_validates_every_option_in_one_line(args, field, capsys):
    base = {"--name": "ok", "--servers": "2", "--gpus-per-server": "2", "--bandwidth": "50mbit"}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    argv = ["testbed", "up"] + [x for kv in base.items() for x in kv]
    code, out, err = _cli(*argv, capsys=capsys)
    assert code == 2 and out == ""
    assert err.startswith("ddlsched: error: ") and err.count("\n") == 1
    assert f"field '{field}'" in err
    assert "Traceback" not in err


def test_rates_read_and_write_as_tc_does():
    assert parse_rate("100mbit") == 100_000_000
    assert parse_rate("1gbit") == 1_000_000_000
    assert parse_rate("1.5GBIT") == 1_500_000_000
    assert parse_rate("2500kbit") == 2_500_000
    assert format_rate(1_500_000_000) == "1500mbit"
    assert format_rate(50_000_000) == "50mbit"
    assert TestbedSpec.parse("x", "1", "1", "1gbit").rate == "1gbit"


def test_names_fit_linux_interface_names():
    """The longest name and the most servers still give names of at most 15 characters."""
    spec = TestbedSpec.parse("a" * 12, 64, 1, "1gbit")
    names = [topology.switch_ns(spec.name)] + [topology.server_ns(spec.name, 63)]
    assert max(len(n) for n in names) == 15
    assert len(topology.port(63)) <= 15 and len(topology.SERVER_DEV) <= 15


def test_subnets_are_private_per_name_and_avoid_taken_and_host_ones():
    import ipaddress

    first = topology.choose_subnet("tb", [], [])
    assert first is not None and first.subnet_of(topology.POOL) and first.is_private
    assert topology.choose_subnet("tb", [], []) == first  # the same name, the same subnet
    second = topology.choose_subnet("tb", [str(first)], [])
    assert second is not None and second != first
    host = [ipaddress.ip_network("10.211.0.0/17"), ipaddress.ip_network("10.211.128.0/17")]
    assert topology.choose_subnet("tb", [], host) is None
    assert topology.addresses(ipaddress.ip_network("10.211.7.0/24"), 3) == [
        "10.211.7.1",
        "10.211.7.2",
        "10.211.7.3",
    ]


def test_the_cluster_file_is_a_cluster_with_its_testbed(tmp_path):
    spec = TestbedSpec.parse("tb", 3, 4, "100mbit")
    path = tmp_path / "cluster.toml"
    path.write_text(
        topology.cluster_toml(spec, ["tb-0", "tb-1", "tb-2"], ["10.0.0.1", "10.0.0.2", "10.0.0.3"])
    )
    cluster = read_cluster(path)
    assert cluster.num_servers == 3 and cluster.num_gpus == 12
    assert cluster.servers[0].network_bandwidth_gbps == pytest.approx(0.1)
    assert cluster.testbed is not None
    assert cluster.testbed.namespaces == ("tb-0", "tb-1", "tb-2")
    assert cluster.testbed.addresses[2] == "10.0.0.3" and cluster.testbed.rate == "100mbit"


@pytest.mark.parametrize(
    "table, field",
    [
        ('name = "x"\nnamespaces = ["x-0"]\naddresses = ["a", "b"]', "testbed.namespaces"),
        ('name = "x"\nnamespaces = ["x-0", "x-1"]', "testbed.addresses"),
        (
            'name = "x"\nnamespaces = ["x-0", "x-1"]\naddresses = ["a", "b"]\nrat = "1"',
            "testbed.rat",
        ),
        ('name = 3\nnamespaces = ["x-0", "x-1"]\naddresses = ["a", "b"]', "testbed.name"),
    ],
)
def test_a_bad_testbed_table_is_one_line_naming_its_field(tmp_path, table, field):
    path = tmp_path / "c.toml"
    path.write_text(f"[[servers]]\nnum_gpus = 1\ncount = 2\n\n[testbed]\n{table}\n")
    with pytest.raises(InputError) as e:
        read_cluster(path)
    assert f"field '{field}'" in str(e.value) and "\n" not in str(e.value)


def test_the_fits_recover_the_models_they_assume():
    """Points made by Wang's model: both fits find them again (the same affine family for
    2-worker jobs), with no error on held-out sizes."""
    from ddlsched.perf.contention import LinearContention

    truth = LinearContention(a=0.004, b=8 / 40e6 * 1.05, eta=0.3 * 8 / 40e6)
    points = [Point(k, s, wang_time(truth, k, s)) for k in (1, 2, 3, 4) for s in (1, 2, 4, 8)]
    fit_sizes, held = split_sizes([1, 2, 4, 8])
    assert (fit_sizes, held) == ([1, 4, 8], [2])
    fits = fit_and_score(points, lambda p: p.size_mb in fit_sizes, 40e6 / 8)
    assert fits.wang.eta == pytest.approx(truth.eta, rel=1e-6)
    assert fits.wang_mre < 1e-9 and fits.yu_mre < 1e-6


def test_wangs_latency_and_rate_are_never_negative():
    """Solo times whose cost per byte grows with the size (as under load) would give a
    negative latency a by plain least squares: the fit keeps a, b ≥ 0, η takes any sign."""
    from ddlsched.testbed.fit import fit_wang

    solo = [Point(1, s, t) for s, t in ((1, 0.17), (4, 0.75), (16, 3.1))]
    more = [Point(2, s, 1.8 * t) for s, t in ((1, 0.17), (4, 0.75), (16, 3.1))]
    fit = fit_wang(solo + more)
    assert fit.a == 0.0 and fit.b > 0 and fit.eta < 0


def test_without_root_one_line(capsys):
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the CLI as another user")
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    probe = subprocess.run([*nobody, "-c", "import ddlsched.cli"], env=env, capture_output=True)
    if probe.returncode != 0:
        pytest.skip("user nobody cannot read this checkout or its Python")
    for cmd in (["up", "--name", "x", "--servers", "1", "--gpus-per-server", "1",
                 "--bandwidth", "10mbit"], ["list"], ["down", "--name", "x"]):  # fmt: skip
        proc = subprocess.run(
            [*nobody, "-m", "ddlsched", "testbed", *cmd],
            capture_output=True, text=True, timeout=60, env=env,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith("ddlsched: error: ") and proc.stderr.count("\n") == 1
        assert "needs root" in proc.stderr


def test_without_ip_and_tc_one_line(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the root check comes first")
    proc = subprocess.run(
        [sys.executable, "-m", "ddlsched", "testbed", "list"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(SRC), "PATH": str(tmp_path)},
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "'ip' not found" in proc.stderr


# ------------------------------------------------------------------------------ namespaces
@needs_netns
def test_up_and_down_leave_nothing_behind(testbed_names, capsys):
    name = testbed_names()
    before_ns, before_links = _netns(), _root_links()
    t0 = time.monotonic()
    code, out, err = _cli(
        "testbed", "up", "--name", name, "--servers", "4", "--gpus-per-server", "2",
        "--bandwidth", "50mbit", capsys=capsys,
    )  # fmt: skip
    elapsed = time.monotonic() - t0
    assert code == 0, err
    assert elapsed < 5.0, f"up of 4 servers took {elapsed:.2f} s"
    made = _netns() - before_ns
    assert made == {f"{name}-sw", f"{name}-0", f"{name}-1", f"{name}-2", f"{name}-3"}
    assert _root_links() == before_links, "up touched the root namespace's links"
    st = tb_state.load_state(name)
    assert st is not None and st.status == "up" and len(set(st.addresses)) == 4
    for i, ns in enumerate(st.server_ns):
        qd = subprocess.run(["tc", "-n", ns, "qdisc", "show", "dev", "eth0"],
                            capture_output=True, text=True).stdout  # fmt: skip
        assert "tbf" in qd and "rate 50Mbit" in qd
        addr = subprocess.run(["ip", "-n", ns, "-o", "-4", "addr", "show", "dev", "eth0"],
                              capture_output=True, text=True).stdout  # fmt: skip
        assert f"{st.addresses[i]}/24" in addr
        routes = subprocess.run(["ip", "-n", ns, "route"], capture_output=True, text=True).stdout
        assert "default" not in routes
    sw = subprocess.run(["tc", "-n", f"{name}-sw", "qdisc", "show"],
                        capture_output=True, text=True).stdout  # fmt: skip
    assert sw.count("tbf") == 4
    cluster = read_cluster(tb_state.testbed_dir(name) / "cluster.toml")
    assert cluster.num_gpus == 8 and cluster.testbed is not None
    assert list(cluster.testbed.addresses) == st.addresses
    code, out, _ = _cli("testbed", "list", capsys=capsys)
    assert code == 0 and any(line.split()[:2] == [name, "up"] for line in out.splitlines())

    pid, start = _sleeper(f"{name}-2")
    code, out, err = _cli("testbed", "down", "--name", name, capsys=capsys)
    assert code == 0, err
    assert "removed 5 namespaces" in out and "ended 1 processes" in out
    assert _netns() == before_ns - {n for n in before_ns if n.startswith(f"{name}-")}
    assert not _alive(pid, start), "down left a process of the testbed running"
    assert _root_links() == before_links
    assert not tb_state.testbed_dir(name).exists()
    code, _, err = _cli("testbed", "down", "--name", name, capsys=capsys)
    assert code == 2 and f"no testbed '{name}'" in err


def _transfer(st: tb_state.TestbedState, senders: list[int], receiver: int) -> list[float]:
    """Goodput (bits/s) of one TCP transfer from each of ``senders`` to ``receiver`` at once,
    counted over 1 s after 0.3 s of warm-up."""
    dst = st.addresses[receiver]
    recv = subprocess.Popen(
        ["ip", "netns", "exec", st.server_ns[receiver], sys.executable, str(XFER), "recv", dst,
         "5201", str(len(senders)), "0.3", "1.0"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert recv.stdout is not None and recv.stdout.readline().strip() == "listening"
        sends = [
            subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    st.server_ns[s],
                    sys.executable,
                    str(XFER),
                    "send",
                    dst,
                    "5201",
                    "10",
                ]
            )  # fmt: skip
            for s in senders
        ]
        out, _ = recv.communicate(timeout=20)
        for p in sends:
            p.wait(timeout=15)
    finally:
        for p in [recv, *locals().get("sends", [])]:
            if p.poll() is None:
                p.kill()
                p.wait()
    return json.loads(out.strip().splitlines()[-1])["bps"]


@needs_netns
def test_a_shaped_uplink_carries_its_rate_and_two_transfers_share_it(testbed_names):
    name = testbed_names()
    res = up(TestbedSpec.parse(name, 3, 1, "50mbit"))
    (alone,) = _transfer(res.state, [0], 1)
    # goodput is below the shaped rate by the headers (1448 of every 1514 bytes): ≈ 47.8 Mbit/s
    assert alone == pytest.approx(50e6, rel=0.10), f"{alone / 1e6:.1f} Mbit/s"
    # two senders into server 1: they share its downlink (its port's egress on the bridge)
    a, b = _transfer(res.state, [0, 2], 1)
    assert a + b == pytest.approx(50e6, rel=0.10), f"{a / 1e6:.1f} + {b / 1e6:.1f} Mbit/s"
    assert a == pytest.approx(25e6, rel=0.35) and b == pytest.approx(25e6, rel=0.35)


@needs_netns
def test_a_crashed_up_is_cleaned_by_the_next_up(testbed_names, capsys):
    name = testbed_names()
    before = _netns()
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    # a real `up`, SIGKILLed as soon as it has recorded itself (or, on a fast machine, done)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ddlsched", "testbed", "up", "--name", name, "--servers", "3",
         "--gpus-per-server", "1", "--bandwidth", "40mbit"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    state_file = tb_state.testbed_dir(name) / tb_state.STATE_FILE
    deadline = time.monotonic() + 30
    while not state_file.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    # what a crash leaves: the state says "creating" by a process that is gone, and
    # namespaces are left (made here where the kill came first), with a stray process
    st = tb_state.load_state(name)
    assert st is not None
    st.status, st.creator_pid = "creating", proc.pid
    tb_state.save_state(st)
    subprocess.run(["ip", "netns", "add", st.server_ns[0]], capture_output=True)
    pid, start = _sleeper(st.server_ns[0])
    rows = {r.name: r for r in list_testbeds()}
    assert rows[name].status == "crashed"

    code, out, err = _cli(
        "testbed", "up", "--name", name, "--servers", "2", "--gpus-per-server", "1",
        "--bandwidth", "40mbit", capsys=capsys,
    )  # fmt: skip
    assert code == 0, err
    assert f"removed what an earlier testbed {name} left behind" in err
    assert not _alive(pid, start)
    assert _netns() - before == {f"{name}-sw", f"{name}-0", f"{name}-1"}
    st = tb_state.load_state(name)
    assert st is not None and st.status == "up" and st.servers == 2


@needs_netns
def test_a_testbed_without_state_is_found_by_its_marks(testbed_names, capsys):
    """State lost (another runtime directory, a deleted file): `list` shows the testbed as
    orphaned from the marks on its links, `down` removes it, and nobody else's namespace."""
    name = testbed_names()
    up(TestbedSpec.parse(name, 2, 1, "40mbit"))
    foreign = f"{name}-7"  # looks like one of its servers but is not marked
    subprocess.run(["ip", "netns", "add", foreign], check=True)
    try:
        tb_state.remove_state(name)
        rows = {r.name: r for r in list_testbeds()}
        assert rows[name].status == "orphaned" and rows[name].namespaces_present == 3
        code, out, _ = _cli("testbed", "down", "--name", name, capsys=capsys)
        assert code == 0 and "removed 3 namespaces" in out
        assert foreign in _netns()
    finally:
        subprocess.run(["ip", "netns", "del", foreign], capture_output=True)


@needs_netns
def test_a_name_taken_by_a_foreign_namespace_is_refused(testbed_names, capsys):
    name = testbed_names()
    subprocess.run(["ip", "netns", "add", f"{name}-sw"], check=True)
    try:
        code, _, err = _cli(
            "testbed", "up", "--name", name, "--servers", "1", "--gpus-per-server", "1",
            "--bandwidth", "40mbit", capsys=capsys,
        )  # fmt: skip
        assert code == 2 and "exists and is not testbed" in err
        assert _netns() >= {f"{name}-sw"} and f"{name}-0" not in _netns()
    finally:
        subprocess.run(["ip", "netns", "del", f"{name}-sw"], capture_output=True)


# ------------------------------------------------------------------------------ measure
def _check_measure_dir(out: Path, ks: list[int], sizes: list[float]) -> dict:
    rows = (out / "contention.csv").read_text().splitlines()
    assert rows[0] == "k,size_mb,measured_s,wang_s,yu_s"
    assert len(rows) == 1 + len(ks) * len(sizes)
    summary = json.loads((out / "summary.json").read_text())
    for key in ("a", "b", "eta", "wang_mre", "yu_mre", "yu", "fit_sizes_mb", "held_out_sizes_mb"):
        assert key in summary
    assert summary["qdisc_drops"] >= 0 and summary["tcp_congestion_control"] != "unknown"
    assert set(summary["yu"]) >= {"xi1", "xi2", "alpha"}
    return summary


@needs_netns
def test_measure_with_the_ring_backend(testbed_names, tmp_path, capsys):
    """k concurrent all-reduces on one pair of uplinks: alone, 1 MB takes ≈ 1 MB at the
    rate; two at once take about twice as long; both models fit within a few per cent."""
    name = testbed_names()
    up(TestbedSpec.parse(name, 2, 2, "40mbit"))
    out = tmp_path / "m"
    code, stdout, err = _cli(
        "testbed", "measure", "--name", name, "--out", str(out), "--sizes", "0.25,0.5,1",
        "--max-k", "2", "--reps", "1", "--backend", "ring", "--tcp", "reno", "--quiet",
        capsys=capsys,
    )  # fmt: skip
    assert code == 0, err
    assert "Wang: a" in stdout and "Yu: xi1" in stdout
    s = _check_measure_dir(out, [1, 2], [0.25, 0.5, 1])
    assert s["backend"] == "ring" and s["held_out_sizes_mb"] == [0.5]
    assert s["tcp_congestion_control"] == "reno"
    table = {
        (int(k), float(m)): float(t)
        for k, m, t, *_ in (r.split(",") for r in (out / "contention.csv").read_text().split()[1:])
    }
    # loose bounds: two shared cores under other load; an unshaped veth would take ~10 ms
    assert table[(1, 1.0)] == pytest.approx(1e6 * 8 / 40e6, rel=0.35), table
    assert table[(2, 1.0)] / table[(1, 1.0)] == pytest.approx(2.0, rel=0.35), table
    assert s["wang_mre"] < 0.25 and s["yu_mre"] < 0.25, s
    st = tb_state.load_state(name)
    assert st is not None
    for ns in st.server_ns:
        assert subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                              text=True).stdout.split() == []  # fmt: skip
    assert tb_state.recorded_pids(name) == []


@needs_netns
def test_measure_refuses_what_it_cannot_run(testbed_names, tmp_path, capsys):
    name = testbed_names()
    code, _, err = _cli("testbed", "measure", "--name", name, "--out", str(tmp_path / "m"),
                        capsys=capsys)  # fmt: skip
    assert code == 2 and f"no testbed '{name}' is up" in err
    up(TestbedSpec.parse(name, 2, 2, "40mbit"))
    for args, field in [
        (["--max-k", "4"], "--max-k"),  # 4 jobs' workers on a 2-GPU server
        (["--placement", "star"], "--placement"),  # needs max-k + 1 servers
        (["--sizes", "1,2"], "--sizes"),
        (["--backend", "mpi"], "--backend"),
        # gloo makes its own sockets (and needs torch: without it the backend is refused)
        (["--backend", "gloo", "--tcp", "cubic"], "--tcp" if torch_available() else "--backend"),
        (["--backend", "ring", "--tcp", "nosuch"], "--tcp"),
    ]:
        code, _, err = _cli("testbed", "measure", "--name", name, "--out", str(tmp_path / "m"),
                            "--max-k", "2", *args, capsys=capsys)  # fmt: skip
        assert code == 2 and f"field '{field}'" in err and err.count("\n") == 1, err


@needs_netns
def test_a_killed_measure_leaves_its_workers_to_down(testbed_names, tmp_path):
    """SIGKILL the coordinator mid-measurement: its workers (recorded by pid) keep running
    until `down` ends them."""
    name = testbed_names()
    up(TestbedSpec.parse(name, 2, 2, "40mbit"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "ddlsched", "testbed", "measure", "--name", name, "--out",
         str(tmp_path / "m"), "--sizes", "1,2,4", "--max-k", "2", "--backend", "ring"],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not tb_state.recorded_pids(name) and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)  # the workers are running all-reduces
    workers = tb_state.recorded_pids(name)
    assert len(workers) == 4
    proc.kill()
    proc.wait(timeout=10)
    assert any(_alive(p, s) for p, s in workers)
    res = down(name)
    assert not [p for p, s in workers if _alive(p, s)]
    assert set(res.processes) >= {p for p, _ in workers if p}


@needs_netns
@pytest.mark.skipif(not torch_available(), reason="the gloo backend needs torch ('testbed' extra)")
def test_measure_with_gloo(testbed_names, tmp_path):
    name = testbed_names()
    up(TestbedSpec.parse(name, 2, 2, "40mbit"))
    res = measure(
        MeasureConfig(
            name=name, out=str(tmp_path / "g"), sizes_mb=(0.25, 0.5, 1.0), max_k=2, reps=1,
            backend="gloo",
        )
    )  # fmt: skip
    s = _check_measure_dir(tmp_path / "g", [1, 2], [0.25, 0.5, 1.0])
    assert s["backend"] == "gloo" and res.summary["wang_mre"] < 0.25
    assert tb_state.recorded_pids(name) == []
