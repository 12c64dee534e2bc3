"""``ddlsched queues decide``'s inputs: Kueue manifests (v1beta1 and v1beta2), the native TOML
form, the workloads file, and one-line errors (file, document, field; exit status 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ddlsched.cli import main
from ddlsched.errors import InputError
from ddlsched.tenancy import load_queues, parse_documents

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "queues"
V2 = "kueue.x-k8s.io/v1beta2"


def rf(name: str) -> dict:
    return {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": name}}


def cq(name: str, flavor: str = "a100", nominal: object = 8, **spec: object) -> dict:
    groups = [
        {
            "coveredResources": ["gpu"],
            "flavors": [{"name": flavor, "resources": [{"name": "gpu", "nominalQuota": nominal}]}],
        }
    ]
    return {
        "apiVersion": V2,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {"resourceGroups": groups, **spec},
    }


def error(docs: list, match: str) -> str:
    with pytest.raises(InputError, match=match) as e:
        parse_documents(docs, "Q.yaml")
    text = str(e.value)
    assert text.startswith("Q.yaml") and "\n" not in text
    return text


def test_example_files_run(capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "queues",
        "decide",
        "--queues",
        str(EXAMPLES / "queues.yaml"),
        "--workloads",
        str(EXAMPLES / "workloads.yaml"),
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert set(json.loads(out)) == {"admitted", "preempted", "pending"}
    assert out.index('"admitted"') < out.index('"pending"') < out.index('"preempted"')  # sorted


def test_toml_form_equals_yaml_form() -> None:
    yaml_config = load_queues(EXAMPLES / "queues.yaml")
    toml_config = load_queues(EXAMPLES / "queues.toml")
    assert toml_config == yaml_config


def test_v1beta1_cohort_and_v1beta2_cohort_name() -> None:
    v1 = cq("a", cohort="org")
    v1["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    config = parse_documents([rf("a100"), v1, cq("b", cohortName="org")], "Q.yaml")
    assert config.cluster_queues["a"].cohort == config.cluster_queues["b"].cohort == "org"
    text = error([rf("a100"), cq("b", cohort="org")], "unknown field 'cohort'")
    assert "document 2 (ClusterQueue 'b')" in text and "field 'spec.cohort'" in text


def test_configuration_turns_fair_sharing_on() -> None:
    conf = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1",
        "kind": "Configuration",
        "fairSharing": {"enable": True, "preemptionStrategies": ["LessThanInitialShare"]},
    }
    config = parse_documents([rf("a100"), cq("a"), conf], "Q.yaml")
    assert config.fair_sharing and config.fs_strategies == ("LessThanInitialShare",)
    conf["fairSharing"] = {"enable": False}
    assert not parse_documents([rf("a100"), cq("a"), conf], "Q.yaml").fair_sharing


def test_unknown_flavor() -> None:
    text = error([rf("a100"), cq("a", flavor="a10O")], "unknown ResourceFlavor 'a10O'")
    assert "did you mean 'a100'" in text
    assert "spec.resourceGroups[0].flavors[0].name" in text


def test_unknown_cohort_when_cohorts_are_declared() -> None:
    co = {"apiVersion": V2, "kind": "Cohort", "metadata": {"name": "org"}}
    error(
        [rf("a100"), co, cq("a", cohortName="orgg")], r"unknown Cohort 'orgg'.*did you mean 'org'"
    )
    # none declared: Kueue's implicit cohorts
    assert parse_documents([rf("a100"), cq("a", cohortName="orgg")], "Q.yaml").cohorts


def test_cohort_cycle() -> None:
    a = {"apiVersion": V2, "kind": "Cohort", "metadata": {"name": "a"}, "spec": {"parentName": "b"}}
    b = {"apiVersion": V2, "kind": "Cohort", "metadata": {"name": "b"}, "spec": {"parentName": "a"}}
    text = error([a, b], "cohort cycle: a → b → a")
    assert "spec.parentName" in text


def test_negative_quota() -> None:
    text = error([rf("a100"), cq("a", nominal=-1)], "cannot be negative")
    assert "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota" in text


def test_duplicate_names() -> None:
    text = error([rf("a100"), cq("a"), cq("a")], "duplicate ClusterQueue name 'a'")
    assert "document 3" in text


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        (
            {
                "apiVersion": "kueue.x-k8s.io/v1alpha1",
                "kind": "ClusterQueue",
                "metadata": {"name": "a"},
            },
            "unsupported apiVersion 'kueue.x-k8s.io/v1alpha1'",
        ),
        (
            {"apiVersion": V2, "kind": "Workload", "metadata": {"name": "a"}},
            "unsupported kind 'Workload'",
        ),
    ],
)
def test_unsupported_api_version_or_kind(doc: dict, match: str) -> None:
    error([doc], match)


def test_unknown_local_queue_target() -> None:
    lq = {
        "apiVersion": V2,
        "kind": "LocalQueue",
        "metadata": {"name": "t"},
        "spec": {"clusterQueue": "b"},
    }
    error([rf("a100"), cq("a"), lq], "unknown ClusterQueue 'b'")


def run_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workloads: object
) -> tuple[int, str]:
    q = tmp_path / "Q.yaml"
    w = tmp_path / "W.yaml"
    q.write_text(yaml.safe_dump_all([rf("a100"), cq("a")]))
    w.write_text(yaml.safe_dump(workloads))
    rc = main(["queues", "decide", "--queues", str(q), "--workloads", str(w)])
    return rc, capsys.readouterr().err


def test_cli_unknown_queue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = run_cli(
        tmp_path,
        capsys,
        {
            "pending": [
                {
                    "name": "x",
                    "queue": "b",
                    "podsets": [{"name": "m", "count": 1, "requests": {"gpu": 1}}],
                }
            ]
        },
    )
    assert rc == 2 and err.count("\n") == 1
    assert "W.yaml" in err and "pending[0] ('x')" in err and "field 'queue'" in err


def test_cli_resource_no_queue_covers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = run_cli(
        tmp_path,
        capsys,
        {
            "pending": [
                {
                    "name": "x",
                    "queue": "a",
                    "podsets": [{"name": "m", "count": 1, "requests": {"tpu": 1}}],
                }
            ]
        },
    )
    assert rc == 2 and "no ClusterQueue covers resource 'tpu'" in err
    assert "field 'podsets[0].requests.tpu'" in err


def test_cli_duplicate_workload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = {"name": "x", "queue": "a", "podsets": [{"name": "m", "count": 1, "requests": {"gpu": 1}}]}
    rc, err = run_cli(tmp_path, capsys, {"pending": [w, w]})
    assert rc == 2 and "pending[1]: duplicate workload name 'x'" in err


def test_cli_unknown_flavor_of_admitted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = run_cli(
        tmp_path,
        capsys,
        {
            "admitted": [
                {
                    "name": "x",
                    "queue": "a",
                    "admitted_at": 0,
                    "podsets": [
                        {
                            "name": "m",
                            "count": 1,
                            "requests": {"gpu": 1},
                            "flavors": {"gpu": "h100"},
                        }
                    ],
                }
            ]
        },
    )
    assert rc == 2 and "unknown ResourceFlavor 'h100'" in err


def test_cli_bad_queues_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    q = tmp_path / "Q.yaml"
    q.write_text("a: &a [*a]\n")
    w = tmp_path / "W.yaml"
    w.write_text("pending: []\n")
    assert main(["queues", "decide", "--queues", str(q), "--workloads", str(w)]) == 2
    assert "recursive alias" in capsys.readouterr().err
