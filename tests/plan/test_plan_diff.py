"""The diff (desired vs facts), the saved-plan reconciliation, and the apply script's behaviour."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from ascendprep.apply.script import parse_apply_output, render_apply_script
from ascendprep.base.paths import ENV_SH, RANK_TABLE, SET_ENV_SH, SYSCTL_FILE
from ascendprep.desired.envfiles import render_sysctl_conf
from ascendprep.desired.state import build_desired
from ascendprep.facts.model import HccnConf, HostFacts, ManagedFile, NpuFacts, ProbeError, SysctlFile, TlsState
from ascendprep.inventory.load import inventory_from_text
from ascendprep.plan.changes import SetNpuAddress, SetNpuGateway, SetNpuNetdetect, SetSysctl, WriteFile
from ascendprep.plan.diff import diff_host, reconcile
from ascendprep.plan.drift import sha256_text

INVENTORY = {
    "name": "t",
    "product": "atlas-a2",
    "npus_per_node": 2,
    "device_network": {"subnet": "10.20.0.0/24", "tls": False},
    "nodes": [{"name": "n[1-2]", "host": "10.0.0.[11-12]"}],
    "software": {"cann": "8.0.RC3"},
}


def desired():
    return build_desired(inventory_from_text(yaml.safe_dump(INVENTORY)))


def converged_facts(state, node="n1", **overrides) -> HostFacts:
    """Facts of a host that already matches the desired state."""
    nd = state.nodes[node]
    npus = {
        h.npu: NpuFacts(
            devid=h.npu, ip=h.ip, netmask=h.netmask, netdetect=h.netdetect, link="UP", tls=TlsState(switch=0)
        )
        for h in nd.hccn
    }
    conf_devices = {h.npu: {"address": h.ip, "netmask": h.netmask, "netdetect": h.netdetect} for h in nd.hccn}
    sysctl = {
        "net.core.somaxconn": "65535",
        "net.ipv4.tcp_max_syn_backlog": "65535",
        "net.ipv4.ip_local_reserved_ports": "60000-60031",
    }
    import hashlib

    files = {f.path: ManagedFile(f.path, True, hashlib.sha256(f.content.encode()).hexdigest()) for f in nd.files}
    target = {
        "net.core.somaxconn": 65535,
        "net.ipv4.tcp_max_syn_backlog": 65535,
        "net.ipv4.ip_local_reserved_ports": "60000-60031",
    }
    values = dict(
        npus=npus,
        hccn_conf=HccnConf(raw="", devices=conf_devices),
        sysctl=sysctl,
        sysctl_file=SysctlFile(render_sysctl_conf(target)),
        managed_files=files,
        hccn_tool="/usr/local/bin/hccn_tool",
    )
    values.update(overrides)
    return HostFacts(**values)


def test_converged_host_has_no_changes():
    state = desired()
    plan = diff_host(state, "n1", converged_facts(state))
    assert plan.changes == [] and plan.incomplete == []


def test_fresh_host_needs_everything_in_order():
    state = desired()
    fresh = HostFacts(
        npus={0: NpuFacts(devid=0, tls=TlsState(switch=1)), 1: NpuFacts(devid=1, tls=TlsState(switch=1))},
        sysctl={
            "net.core.somaxconn": "4096",
            "net.ipv4.tcp_max_syn_backlog": "512",
            "net.ipv4.ip_local_reserved_ports": "8080",
        },
        managed_files={path: ManagedFile(path, False) for path in (ENV_SH, SET_ENV_SH, RANK_TABLE)},
    )
    plan = diff_host(state, "n1", fresh)
    keys = [c.key for c in plan.changes]
    assert keys[:6] == ["hccn.ip:0", "hccn.netdetect:0", "hccn.tls:0", "hccn.ip:1", "hccn.netdetect:1", "hccn.tls:1"]
    assert "sysctl:net.core.somaxconn" in keys and "sysctl:net.ipv4.tcp_max_syn_backlog" in keys
    ports = next(c for c in plan.changes if c.key == "sysctl:net.ipv4.ip_local_reserved_ports")
    assert (
        ports.before == "8080" and ports.after == "8080,60000-60015"
    )  # merged, never replaced (CANN 8.0 reserves 16 ports)
    assert {f"file:{p}" for p in (ENV_SH, SET_ENV_SH, RANK_TABLE, SYSCTL_FILE)} <= set(keys)
    summary = next(c for c in plan.changes if c.key == "sysctl:net.core.somaxconn").describe()
    assert summary == "sysctl net.core.somaxconn 4096 → 65535"
    assert [c.describe() for c in plan.changes if c.npu == 0] == [
        "npu 0: ip none → 10.20.0.1/255.255.255.0",
        "npu 0: netdetect none → 10.20.0.3",
        "npu 0: tls switch 1 → 0",
    ]


def test_higher_sysctl_values_are_kept():
    state = desired()
    facts = converged_facts(
        state,
        sysctl={
            "net.core.somaxconn": "131072",
            "net.ipv4.tcp_max_syn_backlog": "65535",
            "net.ipv4.ip_local_reserved_ports": "60000-60031",
        },
    )
    plan = diff_host(state, "n1", facts)
    assert [c.key for c in plan.changes] == [f"file:{SYSCTL_FILE}"]
    assert "net.core.somaxconn = 131072" in plan.changes[0].content


def test_stale_hccn_conf_is_a_change_even_when_the_device_is_right():
    state = desired()
    good = converged_facts(state)
    conf = dict(good.hccn_conf.devices)
    conf[1] = {**conf[1], "address": "10.20.0.99"}
    plan = diff_host(state, "n1", converged_facts(state, hccn_conf=HccnConf(raw="", devices=conf)))
    assert [c.key for c in plan.changes] == ["hccn.ip:1"]
    assert "/etc/hccn.conf says 10.20.0.99" in plan.changes[0].describe()
    assert plan.changes[0].before == {"device": "10.20.0.2/255.255.255.0", "file": "10.20.0.99/255.255.255.0"}


def test_unknown_probe_values_make_the_host_incomplete_not_changed():
    state = desired()
    facts = converged_facts(state)
    facts = HostFacts(
        **{**facts.__dict__, "errors": (ProbeError("hccn.ip", "timeout", "hccn_tool timed out after 10s", npu=1),)}
    )
    plan = diff_host(state, "n1", facts)
    assert plan.changes == []
    assert plan.incomplete and "npu 1" in plan.incomplete[0] and "timed out" in plan.incomplete[0]


def _ip(npu: int, address: str, device=None) -> SetNpuAddress:
    return SetNpuAddress("n1", {"device": device, "file": None}, npu, address, "255.255.255.0")


def test_reconcile_second_apply_is_all_done():
    planned = [_ip(0, "10.20.0.1")]
    result = reconcile(planned, [])
    assert result.to_apply == [] and result.already_done == planned and result.stale == []


def test_reconcile_partial_apply_continues():
    planned = [_ip(0, "10.20.0.1"), _ip(1, "10.20.0.2")]
    result = reconcile(planned, [_ip(1, "10.20.0.2")])
    assert [c.key for c in result.to_apply] == ["hccn.ip:1"] and not result.stale


def test_reconcile_compares_values_not_words():
    planned = [SetSysctl("n1", "1", "net.core.x", "2")]
    assert reconcile(planned, [SetSysctl("n1", "5", "net.core.x", "2")]).stale == [
        "sysctl:net.core.x: was 1 at planning, is now 5"
    ]
    assert "not in the plan" in reconcile(planned, [SetSysctl("n1", "1", "net.core.y", "2")]).stale[0]
    assert "the plan sets 2" in reconcile(planned, [SetSysctl("n1", "1", "net.core.x", "3")]).stale[0]
    # the file's copy seen otherwise is a move of the host, even with the same device value
    moved = reconcile(
        [_ip(0, "10.20.0.1", "10.20.0.9/255.255.255.0")],
        [
            SetNpuAddress(
                "n1",
                {"device": "10.20.0.9/255.255.255.0", "file": "10.20.0.7/255.255.255.0"},
                0,
                "10.20.0.1",
                "255.255.255.0",
            )
        ],
    )
    assert moved.stale and "was {'device': '10.20.0.9/255.255.255.0', 'file': None} at planning" in moved.stale[0]


def test_a_gateway_seen_otherwise_after_its_npus_address_was_set_is_the_plans_doing():
    gateway = SetNpuGateway("n1", {"device": "10.9.0.254", "file": None}, 0, "10.20.0.254")
    now = SetNpuGateway("n1", {"device": None, "file": None}, 0, "10.20.0.254")
    result = reconcile([_ip(0, "10.20.0.1"), gateway], [now])
    assert result.stale == [] and result.to_apply == [now]
    alone = reconcile([gateway], [now])
    assert alone.stale and alone.to_apply == []


def test_apply_script_runs_steps_and_skips_the_rest_of_a_failed_npu(tmp_path: Path):
    """The rendered script, run by a real sh against a fake hccn_tool that fails NPU 1's IP."""
    tool = tmp_path / "hccn_tool"
    log = tmp_path / "calls"
    tool.write_text(f"""#!/bin/sh
echo "$@" >> {log}
if [ "$2" = 1 ] && [ "$3" = -ip ]; then echo "The ip address configured is conflicted!" >&2; exit 7; fi
echo "Cmd executed successfully!"
""")
    tool.chmod(0o755)
    target = tmp_path / "etc" / "env.sh"
    changes = [
        SetNpuAddress("n1", None, 1, "10.20.0.2", "255.255.255.0"),
        SetNpuNetdetect("n1", None, 1, "10.20.0.3"),
        SetNpuAddress("n1", None, 0, "10.20.0.1", "255.255.255.0"),
        WriteFile("n1", None, str(target), sha256_text("it's $(not) run\n"), "it's $(not) run\n", 0o640),
    ]
    script = render_apply_script(changes, str(tool), lock_dir=str(tmp_path / "lock"))
    done = subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True)
    results = parse_apply_output(done.stdout)
    assert results["hccn.ip:0"].ok and "Cmd executed successfully!" in results["hccn.ip:0"].output
    assert results["hccn.ip:1"].rc == 7 and "conflicted" in results["hccn.ip:1"].output
    assert results["hccn.netdetect:1"].skipped
    assert results[f"file:{target}"].ok
    assert target.read_text() == "it's $(not) run\n" and oct(target.stat().st_mode & 0o777) == "0o640"
    assert "-netdetect" not in log.read_text()
    # a second write keeps the previous version as a backup
    subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True)
    assert Path(f"{target}.ascendprep.bak").read_text() == "it's $(not) run\n"


def test_a_gateway_the_inventory_no_longer_plans_is_removed():
    """The inventory plans no gateway: one the device or /etc/hccn.conf still has is a change to
    none, which the plan shows (and says the device keeps it until its driver restarts); an NPU
    without one needs nothing."""
    state = desired()
    base = converged_facts(state)
    both = dict(base.npus)
    both[0] = NpuFacts(
        devid=0,
        ip="10.20.0.1",
        netmask="255.255.255.0",
        gateway="10.20.0.254",
        netdetect=both[0].netdetect,
        link="UP",
        tls=TlsState(switch=0),
    )
    devices = {n: dict(v) for n, v in base.hccn_conf.devices.items()}
    devices[0]["gateway"] = "10.20.0.254"
    devices[1]["gateway"] = "10.20.0.254"  # npu 1: only the file still has it
    plan = diff_host(state, "n1", converged_facts(state, npus=both, hccn_conf=HccnConf(raw="", devices=devices)))
    assert [(c.key, c.before, c.after) for c in plan.changes] == [
        ("hccn.gateway:0", {"device": "10.20.0.254", "file": "10.20.0.254"}, None),
        ("hccn.gateway:1", {"device": None, "file": "10.20.0.254"}, None),
    ]
    assert [c.describe() for c in plan.changes] == [
        "npu 0: gateway 10.20.0.254 → none: taken out of /etc/hccn.conf; the device keeps it until its driver restarts (hccn_tool cannot remove a gateway)",
        "npu 1: gateway none (/etc/hccn.conf says 10.20.0.254) → none: the line is taken out of /etc/hccn.conf",
    ]
    assert diff_host(state, "n1", base).changes == []


def test_a_gateway_removal_survives_the_plan_file_and_nothing_else_with_no_value_does():
    from ascendprep.plan.changes import ChangeError, from_saved

    removal = from_saved("hccn.gateway", "n1", "npu 0", {"device": "10.20.0.254", "file": None}, None)
    assert removal == SetNpuGateway("n1", {"device": "10.20.0.254", "file": None}, 0, None) and removal.removes
    for kind in ("hccn.netdetect", "hccn.ip"):
        try:
            from_saved(kind, "n1", "npu 0", None, None)
        except ChangeError:
            continue
        raise AssertionError(f"{kind} without a value was read back")


def _fake_gateway_tool(tmp_path: Path, still_routes: bool) -> Path:
    tool = tmp_path / "hccn_tool"
    answer = (
        'echo "default gateway:10.20.0.254, Iface:eth$2"; exit 0'
        if still_routes
        else 'echo "Get gateway failed, because no gateway was preset there!" >&2; exit 2'
    )
    tool.write_text(
        f'#!/bin/sh\necho "$@" >> {tmp_path / "calls"}\nif [ "$3" = -gateway ] && [ "$4" = -g ]; then {answer}; fi\nexit 9\n'
    )
    tool.chmod(0o755)
    return tool


def test_apply_takes_a_removed_gateway_out_of_hccn_conf_and_says_when_the_device_keeps_it(tmp_path: Path):
    """hccn_tool has no removal command: the step rewrites /etc/hccn.conf without gateway_N (the
    other lines kept, the original kept as .ascendprep.orig), then asks the device; a gateway it
    still routes through fails the step with why, none makes it pass."""
    conf = tmp_path / "hccn.conf"
    original = "address_0=10.20.0.1\nnetmask_0=255.255.255.0\ngateway_0=10.20.0.254\ngateway_1=10.20.0.254\nnetdetect_0=10.20.0.3\n"
    conf.write_text(original)
    conf.chmod(0o600)
    removal = SetNpuGateway("n1", {"device": "10.20.0.254", "file": "10.20.0.254"}, 0, None)
    for still_routes, ok in ((True, False), (False, True)):
        conf.write_text(original)
        tool = _fake_gateway_tool(tmp_path, still_routes)
        script = render_apply_script([removal], str(tool), lock_dir=str(tmp_path / "lock")).replace(
            "/etc/hccn.conf", str(conf)
        )
        done = subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True)
        step = parse_apply_output(done.stdout)["hccn.gateway:0"]
        assert conf.read_text() == original.replace("gateway_0=10.20.0.254\n", "")
        assert oct(conf.stat().st_mode & 0o777) == "0o600"
        assert Path(f"{conf}.ascendprep.orig").read_text() == original
        assert f"took gateway_0 out of {conf}" in step.output
        assert step.ok is ok, step.output
        if still_routes:
            assert step.rc == 1 and "npu 0 still routes through this gateway until its driver restarts" in step.output
            assert "default gateway:10.20.0.254, Iface:eth0" in step.output
        else:
            assert "npu 0 has no gateway" in step.output
    assert "-gateway -s" not in (tmp_path / "calls").read_text()  # the tool is only asked
    # run again: the file holds no gateway_0 now and is left as it is
    done = subprocess.run(["sh", "-s"], input=script, capture_output=True, text=True)
    assert f"{conf} holds no gateway_0" in parse_apply_output(done.stdout)["hccn.gateway:0"].output
