"""Sia's inputs (issue #29, docs/sia.md): its cluster presets, its profile directories (one
``placements-<type>.csv``/``scalability-<type>.csv`` per GPU type) and its workload CSV, read
as the artifact writes them. The profiles here are tiny ones of our own in the artifact's
format; nothing of the artifact's data is used."""

from __future__ import annotations

import pytest

from ddlsched.cli import main
from ddlsched.core.cluster_io import is_cluster_preset, load_cluster
from ddlsched.core.sia_clusters import SIA_MAX_PHYSICAL_NODES
from ddlsched.errors import InputError


# ---------------------------------------------------------------------- cluster presets
@pytest.mark.parametrize(
    ("name", "types", "servers"),
    [
        # simulator_config.py:11, the paper's Heterogeneous setting
        ("sia-64", {"aws": 24, "dgx-ext": 16, "rtx": 24}, 11),
        # simulator_config.py:12, the Homogeneous setting (Table 4)
        ("sia-homo-64", {"aws": 64}, 16),
        # simulator_config.py:13, the 44-GPU physical testbed
        ("sia-physical-44", {"rtx": 24, "dgx-ext": 16, "quad": 4}, 6),
        # --cluster_scale 8 (workloads/scale/scale_8x)
        ("sia-64x8", {"aws": 192, "dgx-ext": 128, "rtx": 192}, 88),
    ],
)
def test_sia_presets_have_the_artifacts_gpus_per_type(name, types, servers) -> None:
    cl = load_cluster(name)
    assert cl.name == name and cl.gpu_types == types and cl.num_servers == servers
    assert cl.typed and not cl.heterogeneous  # declared types, every one at speed 1
    per_node = {"aws": 4, "dgx-ext": 8, "rtx": 8, "quad": 4}  # simulator_config.py:9
    assert all(s.num_gpus == per_node[s.gpu_type] for s in cl.servers)
    # each type's nodes together, in the artifact's order
    order = [s.gpu_type for s in cl.servers]
    assert order == sorted(order, key=list(types).index)
    assert is_cluster_preset(name.upper())


def test_sia_64_first_nodes_are_aws_t4s() -> None:
    cl = load_cluster("sia-64")
    assert [s.gpu_type for s in cl.servers[:6]] == ["aws"] * 6
    assert {s.gpu_type: s.gpu_memory_mb for s in cl.servers} == {
        "aws": 16384.0,  # T4 16 GB
        "dgx-ext": 40960.0,  # A100 40 GB
        "rtx": 11264.0,  # RTX 2080 Ti 11 GB
    }
    assert load_cluster("sia-64x1").gpu_types == cl.gpu_types
    assert SIA_MAX_PHYSICAL_NODES["rtx"] == 3 and SIA_MAX_PHYSICAL_NODES["aws"] == 16


@pytest.mark.parametrize("name", ["sia-64x0", "sia-64x15626", "sia-64x999999"])
def test_sia_scaled_preset_bounds(name) -> None:
    with pytest.raises(InputError, match=r"field 'cluster': sia-64xN needs 1 ≤ N ≤ 15625"):
        load_cluster(name)


def test_list_shows_the_sia_presets(capsys) -> None:
    assert main(["list"]) == 0
    clusters = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("clusters:"))
    for name in ("sia-64", "sia-homo-64", "sia-physical-44", "sia-64xN"):
        assert name in clusters
