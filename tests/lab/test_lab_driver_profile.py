"""``lab up --driver-profile`` / ``--node-driver-profile``: which driver generation each node speaks (no root)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from ascendprep.lab.cli import lab_group
from ascendprep.lab.spec import LabSpec, LabSpecError


def test_default_is_current_everywhere():
    assert {n.driver_profile for n in LabSpec(nodes=3).validated().node_list()} == {"current"}


def test_lab_wide_profile_with_a_per_node_exception():
    spec = LabSpec(nodes=3, driver_profile="legacy", node_driver_profiles=(("node2", "current"),)).validated()
    assert [(n.name, n.driver_profile) for n in spec.node_list()] == [
        ("node1", "legacy"),
        ("node2", "current"),
        ("node3", "legacy"),
    ]


@pytest.mark.parametrize(
    "spec, message",
    [
        (LabSpec(driver_profile="ancient"), "--driver-profile 'ancient': choose one of current, legacy"),
        (
            LabSpec(nodes=2, node_driver_profiles=(("node3", "legacy"),)),
            "--node-driver-profile node3=legacy: the lab has no node 'node3' (nodes are node1 to node2)",
        ),
        (
            LabSpec(node_driver_profiles=(("node1", "legacy"), ("node1", "current"))),
            "--node-driver-profile node1=current: node1 is given a driver profile twice",
        ),
        (
            LabSpec(node_driver_profiles=(("node1", "old"),)),
            "--node-driver-profile node1=old: unknown driver profile 'old' (choose one of current, legacy)",
        ),
    ],
)
def test_bad_profiles_name_the_option(spec, message):
    with pytest.raises(LabSpecError) as caught:
        spec.validated()
    assert str(caught.value) == message


def test_profiles_round_trip_through_the_saved_json_and_older_records_default():
    spec = LabSpec(nodes=2, node_driver_profiles=(("node2", "legacy"),)).validated()
    assert LabSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    older = {
        key: value for key, value in spec.to_dict().items() if key not in ("driver_profile", "node_driver_profiles")
    }
    assert LabSpec.from_dict(older).driver_profile_of("node2") == "current"
    assert LabSpec(nodes=2).validated().differences(spec) == ["node_driver_profiles: () → (('node2', 'legacy'),)"]


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--node-driver-profile", "node2"],
            "error: --node-driver-profile 'node2': write NODE=PROFILE, e.g. node2=legacy",
        ),
        (
            ["--nodes", "2", "--node-driver-profile", "node7=legacy"],
            "error: --node-driver-profile node7=legacy: the lab has no node 'node7' (nodes are node1 to node2)",
        ),
    ],
)
def test_cli_refuses_bad_node_profiles_with_exit_2(args, message):
    result = CliRunner().invoke(lab_group, ["up", "--name", "profiletest", *args])
    assert result.exit_code == 2
    assert message in result.output


def test_cli_help_lists_the_profiles():
    result = CliRunner().invoke(lab_group, ["up", "--help"])
    assert "--driver-profile [current|legacy]" in result.output and "NODE=PROFILE" in result.output


def test_chip_names_are_the_products_real_ones():
    assert LabSpec(product="atlas-a2", chip="910B2C").validated().chip == "910B2C"
    with pytest.raises(LabSpecError) as caught:
        LabSpec(product="atlas-a2", chip="910C").validated()
    assert (
        str(caught.value)
        == "--chip 910C: atlas-a2 chips are named 910B1, 910B2, 910B2C, 910B3, 910B4, 910B4-1, not '910C'"
    )
    with pytest.raises(LabSpecError, match="atlas-800 chips are named 910A, 910B"):
        LabSpec(product="atlas-800", chip="910B4").validated()
