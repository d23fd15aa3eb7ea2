"""The lab's pure derivations: validation, names, addresses (no root needed)."""

from __future__ import annotations

import pytest

from ascendprep.lab.spec import (
    LabSpec,
    LabSpecError,
    Versions,
    device_pool,
    drifted_version,
    host_range,
    netns_pattern,
)


def test_defaults_resolve_npus_from_the_product():
    assert LabSpec(product="atlas-a2").validated().npus == 8
    assert LabSpec(product="atlas-800").validated().npus == 8
    assert LabSpec(product="atlas-a3").validated().npus == 16


@pytest.mark.parametrize(
    "spec, option",
    [
        (LabSpec(nodes=0), "--nodes"),
        (LabSpec(nodes=65), "--nodes"),
        (LabSpec(product="atlas-900"), "--product"),
        (LabSpec(product="atlas-800", npus=3), "--npus"),
        (LabSpec(product="atlas-a2", npus=9), "--npus"),
        (LabSpec(product="atlas-a3", npus=3), "--npus"),
        (LabSpec(subnet="10.231.0.0/25"), "--subnet"),
        (LabSpec(subnet="10.231.0.1/24"), "--subnet"),
        (LabSpec(subnet="8.8.8.0/24"), "--subnet"),
        (LabSpec(subnet="banana"), "--subnet"),
        (LabSpec(name="-lab"), "--name"),
        (LabSpec(name="a b"), "--name"),
        (LabSpec(versions=Versions(cann="8.0 RC3")), "--cann"),
        (LabSpec(versions=Versions(torch_npu="$(reboot)")), "--torch-npu"),
    ],
)
def test_bad_values_name_the_option(spec, option):
    with pytest.raises(LabSpecError, match=option.replace("-", r"\-")):
        spec.validated()


def test_nodes_get_consecutive_addresses_from_dot_eleven():
    nodes = LabSpec(nodes=4, subnet="10.231.7.0/24").validated().node_list()
    assert [n.name for n in nodes] == ["node1", "node2", "node3", "node4"]
    assert [n.mgmt_ip for n in nodes] == ["10.231.7.11", "10.231.7.12", "10.231.7.13", "10.231.7.14"]
    assert LabSpec(subnet="10.231.7.0/24").bridge_ip == "10.231.7.1"


def test_interface_names_fit_the_kernel_limit_for_any_lab_name():
    spec = LabSpec(name="a-very-long-lab-name-that-goes-on-and-on", nodes=64).validated()
    names = [spec.bridge] + [n.veth for n in spec.node_list()]
    assert all(len(name) <= 15 for name in names)
    assert len(set(names)) == len(names)


def test_two_labs_never_share_link_names():
    one, two = LabSpec(name="lab").validated(), LabSpec(name="lab2").validated()
    assert one.bridge != two.bridge
    assert not {n.veth for n in one.node_list()} & {n.veth for n in two.node_list()}


def test_netns_pattern_claims_only_its_own_lab():
    pattern = netns_pattern("lab")
    assert pattern.match("ascendprep-lab-node12")
    assert not pattern.match("ascendprep-lab-2-node1")
    assert not pattern.match("ascendprep-lab-node1-node2")


def test_differences_say_what_changed():
    old = LabSpec(nodes=4).validated()
    new = LabSpec(nodes=8, versions=Versions(cann="8.0.RC2")).validated()
    assert old.differences(new) == ["nodes: 4 → 8", "versions.cann: 8.0.RC3 → 8.0.RC2"]
    assert old.differences(old) == []


def test_spec_round_trips_through_json_form():
    spec = LabSpec(name="x", nodes=3, product="atlas-800", versions=Versions(driver="23.0.7")).validated()
    assert LabSpec.from_dict(spec.to_dict()) == spec


def test_device_pool_grows_past_a_slash_24_only_when_needed():
    assert device_pool(4, 8) == "10.20.0.0/24"
    assert device_pool(31, 8) == "10.20.0.0/24"
    assert device_pool(32, 8) == "10.20.0.0/23"
    assert device_pool(64, 8) == "10.20.0.0/22"
    assert device_pool(64, 16) == "10.20.0.0/21"


def test_drifted_version_changes_the_last_number():
    assert drifted_version("8.0.RC3") == "8.0.RC2"
    assert drifted_version("2.13.0") == "2.13.1"
    assert drifted_version("2.1.0.post6") == "2.1.0.post5"


def test_host_range_is_plain_for_one_node():
    assert host_range("node", 1, 1) == "node1"
    assert host_range("10.0.0.", 11, 14) == "10.0.0.[11-14]"


def test_lab_torch_npu_metadata_follows_the_installed_torch(monkeypatch):
    """torch_npu releases track torch's version: a fixed 2.13.0 reads as a mismatch under torch 2.14."""
    import importlib.metadata

    from ascendprep.lab.spec import DEFAULT_TORCH_NPU, Versions

    real_version = importlib.metadata.version

    def fake_version(name: str) -> str:
        return "2.14.0+cpu" if name == "torch" else real_version(name)

    monkeypatch.setattr(importlib.metadata, "version", fake_version)
    assert Versions().torch_npu == "2.14.0"

    def no_torch(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", no_torch)
    assert Versions().torch_npu == DEFAULT_TORCH_NPU


def test_an_atlas_350_spec_built_in_code_gets_the_950_stack_and_a2_a3_keep_theirs() -> None:
    # lab up and LabSpec/start_test_lab agree: the default is the spec's, not the CLI's
    assert LabSpec(product="atlas-350", nodes=1).validated().versions.cann_tree()["cann"] == "9.0.0"
    assert LabSpec(product="atlas-350", nodes=1).validated().versions.driver == "25.7.rc1"
    for product in ("atlas-a2", "atlas-a3"):
        versions = LabSpec(product=product, nodes=2).validated().versions
        assert (versions.cann, versions.driver) == ("8.0.RC3", "24.1.rc2")
    chosen = LabSpec(product="atlas-350", nodes=1, versions=Versions(cann="9.1.0")).validated().versions
    assert (chosen.cann, chosen.driver) == ("9.1.0", "25.7.rc1")
    with pytest.raises(LabSpecError, match="validate the spec first"):
        Versions().cann_tree()


def test_the_default_atlas_350_lab_stack_passes_the_950_compat_rules() -> None:
    from datetime import date

    from ascendprep.compat.stack import check_stack

    versions = LabSpec(product="atlas-350", nodes=1).validated().versions
    issues = check_stack({"cann": versions.cann, "driver": versions.driver}, chip="atlas-350", today=date(2026, 11, 1))
    assert not [i.id for i in issues if i.id in ("compat.chip_cann", "compat.chip_driver")]
    # what the A2 defaults gave a 950 lab before: refused
    issues = check_stack({"cann": "8.0.RC3", "driver": "24.1.rc2"}, chip="atlas-350", today=date(2026, 11, 1))
    assert {"compat.chip_cann", "compat.chip_driver"} <= {i.id for i in issues}
