"""The lab's A3 super-pod simulation (lab/sim/superpod.py): spod-info, vNICs, -hccs_ping, the
driver's reserved ranges, and the HCCS and SDID faults with their unlike variants."""

from __future__ import annotations

import pytest
from a3sim import A3Lab

from ascendprep.facts.superpod import parse_spod_info, parse_vnic
from ascendprep.lab.sim import state


@pytest.fixture
def lab(tmp_path):
    return A3Lab(tmp_path, nodes=4, pod_servers=2)


def _spod(lab, node, npu, chip):
    result = lab.npu_smi(node, "info", "-t", "spod-info", "-i", str(npu), "-c", str(chip))
    assert result.returncode == 0, result.stderr
    return parse_spod_info(result.stdout, npu, chip)


def _ping(lab, node, devid, address):
    return lab.hccn(node, "-i", str(devid), "-hccs_ping", "-g", "address", address)


def test_spod_info_packs_the_sdid_as_the_driver_and_numbers_pods_in_node_order(lab):
    die = _spod(lab, "node3", 5, 1)  # pod 1, its first server
    assert (die.super_pod_id, die.server_index, die.pod_size) == (1, 0, 16)
    assert die.sdid == (0 << 22) | (5 << 18) | (1 << 16) | 11
    assert _spod(lab, "node2", 0, 0).sdid == 1 << 22  # server index 1 of pod 0, device 0
    # SDIDs restart in every pod: node1 and node3 hold the same ones, which is allowed
    assert _spod(lab, "node1", 2, 0).sdid == _spod(lab, "node3", 2, 0).sdid


def test_vnic_follows_the_server_index_die_and_device(lab):
    out = lab.hccn("node2", "-i", "3", "-vnic", "-g")
    assert out.returncode == 0
    assert parse_vnic(out.stdout) == {"vnic_ip": "192.1.3.196"}
    assert parse_vnic(lab.hccn("node1", "-i", "0", "-vnic", "-g").stdout) == {"vnic_ip": "192.0.2.199"}


def test_hccs_ping_reaches_a_die_of_the_same_pod_only(lab):
    ok = _ping(lab, "node1", 3, "192.1.3.196")  # node2's device 3
    assert ok.returncode == 0
    assert "3 packets transmitted, 3 received, 0.00% packets loss" in ok.stdout
    assert ok.stdout.count("This pkt ping success!") == 3
    # node3 (pod 1) names the same address, but it is its own pod's server 1, node4: reached
    assert _ping(lab, "node3", 3, "192.1.3.196").returncode == 0
    # an address no die of the pod has
    lost = _ping(lab, "node1", 3, "192.7.3.196")
    assert lost.returncode != 0 and "3 packets transmitted, 0 received, 100.00% packets loss" in lost.stdout


def test_hccs_link_down_breaks_that_die_only_and_roce_link_down_leaves_hccs(lab):
    state.set_fault(lab.state_dir, "node2", "hccs-link-down", 3)
    assert _ping(lab, "node1", 3, "192.1.3.196").returncode != 0  # to the die
    assert _ping(lab, "node2", 3, "192.0.3.196").returncode != 0  # from the die
    assert _ping(lab, "node1", 2, "192.1.2.197").returncode == 0  # its sibling die is fine
    # unlike variant: the RoCE port down (link-down) is another plane
    state.clear_faults(lab.state_dir)
    state.set_fault(lab.state_dir, "node2", "link-down", 3)
    assert _ping(lab, "node1", 3, "192.1.3.196").returncode == 0


def test_sdid_duplicate_reports_the_sibling_die_sdid(lab):
    state.set_fault(lab.state_dir, "node2", "sdid-duplicate", 5)
    assert _spod(lab, "node2", 2, 1).sdid == _spod(lab, "node2", 2, 0).sdid  # devid 5 = NPU 2 die 1
    assert _spod(lab, "node2", 3, 1).sdid != _spod(lab, "node2", 3, 0).sdid


def test_a3_faults_need_a_super_pod_node(tmp_path):
    lab = A3Lab(tmp_path, nodes=2, pod_servers=0)
    with pytest.raises(state.LabStateError, match="needs an atlas-a3 node in a super-pod"):
        state.set_fault(lab.state_dir, "node1", "hccs-link-down", 0)


def test_reserved_ranges_inside_and_outside_a_pod(tmp_path):
    in_pod = A3Lab(tmp_path / "pod", nodes=2, pod_servers=2)
    outside = A3Lab(tmp_path / "flat", nodes=2, pod_servers=0)

    def set_ip(lab, address):
        return lab.hccn("node1", "-i", "0", "-ip", "-s", "address", address, "netmask", "255.255.255.0")

    refused = set_ip(in_pod, "192.10.0.5")  # all of 192.0.0.0/8 inside a pod
    assert refused.returncode != 0 and "conflicted" in refused.stdout + refused.stderr
    assert set_ip(outside, "192.10.0.5").returncode == 0  # outside a pod only 192.168.0.0/21
    refused = set_ip(outside, "192.168.5.5")
    assert refused.returncode != 0 and "conflicted" in refused.stdout + refused.stderr
    assert set_ip(outside, "192.168.9.5").returncode == 0
    assert set_ip(in_pod, "10.20.0.5").returncode == 0


def test_lab_spec_pod_servers():
    from ascendprep.lab.spec import LabSpec, LabSpecError

    spec = LabSpec(product="atlas-a3", nodes=6, pod_servers=3).validated()
    assert [spec.super_pod_of(i) for i in (1, 3, 4)] == [
        {"id": 0, "server_index": 0, "size": 24},
        {"id": 0, "server_index": 2, "size": 24},
        {"id": 1, "server_index": 0, "size": 24},
    ]
    assert LabSpec(product="atlas-a3").validated().pod_servers == 2
    assert LabSpec(product="atlas-a3", pod_servers=0).validated().super_pod_of(1) is None
    assert LabSpec(product="atlas-a2").validated().super_pod_of(1) is None
    with pytest.raises(LabSpecError, match="only atlas-a3 servers are in super-pods"):
        LabSpec(product="atlas-a2", pod_servers=2).validated()
    with pytest.raises(LabSpecError, match="--pod-servers 49"):
        LabSpec(product="atlas-a3", pod_servers=49).validated()


def test_other_products_have_no_super_pod_queries(tmp_path):
    """Unlike variant: an A2 node refuses spod-info, -vnic and -hccs_ping, and keeps only the
    vNIC host /24 (192.168.1.0/24) reserved; 192.10.0.0/24 is a device subnet there."""
    a2 = A3Lab(tmp_path, nodes=2, pod_servers=None, npus=8, product="atlas-a2")
    assert a2.npu_smi("node1", "info", "-t", "spod-info", "-i", "0", "-c", "0").returncode != 0
    vnic = a2.hccn("node1", "-i", "0", "-vnic", "-g")
    assert vnic.returncode != 0 and "not supported" in vnic.stdout + vnic.stderr
    assert a2.hccn("node1", "-i", "0", "-hccs_ping", "-g", "address", "192.0.2.199").returncode != 0
    assert a2.hccn("node1", "-i", "0", "-ip", "-s", "address", "192.10.0.5", "netmask", "255.255.255.0").returncode == 0
