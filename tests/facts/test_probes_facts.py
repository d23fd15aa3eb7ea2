"""HostFacts survive JSON unchanged, and a foreign document is refused with a clear error."""

from __future__ import annotations

import json

import pytest

from ascendprep.facts.model import (
    FACTS_SCHEMA_VERSION,
    FactsFormatError,
    Firewall,
    FirewallTool,
    HccnConf,
    HostFacts,
    LinkRecord,
    LinkStat,
    LldpNeighbor,
    ManagedFile,
    NpuFacts,
    NpuHealth,
    NpuSmiDevice,
    NpuSmiList,
    ProbeError,
    PythonEnv,
    SysctlFile,
    TlsState,
    VersionFile,
    Versions,
)


def _rich_facts() -> HostFacts:
    return HostFacts(
        hostname="node-01",
        os_release={"ID": "openEuler", "VERSION_ID": "22.03"},
        arch="aarch64",
        ascend_home="/usr/local/Ascend",
        hccn_tool="/usr/local/Ascend/driver/tools/hccn_tool",
        npu_smi_tool="/usr/local/sbin/npu-smi",
        npus={
            0: NpuFacts(
                devid=0,
                ip="10.20.0.10",
                netmask="255.255.255.0",
                gateway="10.20.0.1",
                gateway_iface="eth0",
                netdetect="10.20.0.1",
                link="UP",
                net_health="Success",
                lldp=LldpNeighbor(system_name="LEAF-1", port_ifname="400GE1/1/1", port_id="Ifname: 400GE1/1/1"),
                tls=TlsState(switch=0, preconfigured=1),
                link_stat=LinkStat("Wed Jun  7 10:08:28 2023", 2, 1, (LinkRecord("Tue Jun  6 16:32:12 2023", "UP"),)),
                optical_present=True,
                speed_mbps=200000,
            ),
            1: NpuFacts(devid=1),
        },
        hccn_conf=HccnConf(raw="address_0=10.20.0.10\n", devices={0: {"address": "10.20.0.10"}}),
        npu_smi=NpuSmiList(total_count=2, devices=(NpuSmiDevice(0), NpuSmiDevice(1, product_name="Atlas 800T A2"))),
        npu_health=(NpuHealth(0, 0, "OK"), NpuHealth(1, 0, "Alarm", "80E18005", "heartbeat")),
        sysctl={"net.core.somaxconn": "65535", "net.ipv4.ip_local_reserved_ports": ""},
        sysctl_file=SysctlFile(raw="net.core.somaxconn = 65535\n", values={"net.core.somaxconn": "65535"}),
        firewall=Firewall(ufw=FirewallTool(True, False), nftables=FirewallTool(True, True, "inet filter")),
        managed_files={"/etc/ascendprep/env.sh": ManagedFile("/etc/ascendprep/env.sh", True, "b" * 64)},
        versions=Versions(
            driver=VersionFile("/usr/local/Ascend/driver/version.info", {"Version": "24.1.rc1"}),
            cann=(VersionFile("/usr/local/Ascend/cann-8.5.0/share/info/runtime/version.info", {"Version": "8.5.0"}),),
        ),
        python=PythonEnv("python3", "3.10.12", "/usr/bin/python3", {"torch": "2.1.0", "torch_npu": None}),
        errors=(ProbeError("hccn.lldp", "timeout", "hccn_tool -i 1 -lldp -g timed out after 10s", npu=1),),
    )


def test_json_round_trip_is_lossless():
    facts = _rich_facts()
    document = json.loads(json.dumps(facts.to_dict()))
    assert document["schema_version"] == FACTS_SCHEMA_VERSION
    assert HostFacts.from_dict(document) == facts


def test_helpers_read_the_facts():
    facts = _rich_facts()
    assert facts.os_id == "openEuler"
    assert facts.versions.driver_version == "24.1.rc1"
    assert facts.versions.cann_version == "8.5.0"
    assert facts.firewall.any_active
    assert [e.npu for e in facts.errors_for("hccn.")] == [1]
    assert facts.errors_for("hccn.lldp", npu=0) == ()
    assert facts.npus[0].tls.enabled is False


@pytest.mark.parametrize(
    "document, message",
    [
        ([], "must be a JSON object"),
        ({"hostname": "x"}, "schema_version None"),
        ({"schema_version": 99}, "schema_version 99"),
        ({"schema_version": FACTS_SCHEMA_VERSION, "npus": {"zero": {"devid": 0}}}, "invalid host facts"),
        (
            {"schema_version": FACTS_SCHEMA_VERSION, "errors": [{"probe": "x", "kind": "oops", "message": ""}]},
            "invalid host facts",
        ),
    ],
)
def test_foreign_documents_are_refused(document, message):
    with pytest.raises(FactsFormatError, match=message):
        HostFacts.from_dict(document)


def test_probe_error_kind_is_checked():
    with pytest.raises(ValueError, match="kind must be one of"):
        ProbeError("hccn.ip", "broken", "x")
